//! Durations as scenario files write them, Go style: `30s`, `4m`, `1h30m`, `250ms`.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, de};

/// A span of (virtual) time read from a scenario file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct VirtualDuration(pub Duration);

impl VirtualDuration {
    pub fn parse(text: &str) -> Result<Self, String> {
        let invalid = |why: &str| {
            format!("invalid duration `{text}`: {why} (write e.g. 30s, 4m, 1h30m or 250ms)")
        };
        let mut rest = text.trim();
        if rest.is_empty() {
            return Err(invalid("it is empty"));
        }
        let mut total = Duration::ZERO;
        while !rest.is_empty() {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if digits == 0 {
                return Err(invalid("expected a number"));
            }
            let n: u64 = rest[..digits]
                .parse()
                .map_err(|_| invalid("the number is too large"))?;
            rest = &rest[digits..];
            let unit_len = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            let unit = match &rest[..unit_len] {
                "h" => Duration::from_secs(3600),
                "m" => Duration::from_secs(60),
                "s" => Duration::from_secs(1),
                "ms" => Duration::from_millis(1),
                "" => return Err(invalid("a number needs a unit (h, m, s or ms)")),
                other => return Err(invalid(&format!("unknown unit `{other}`"))),
            };
            rest = &rest[unit_len..];
            total = u32::try_from(n)
                .ok()
                .and_then(|n| unit.checked_mul(n))
                .and_then(|d| total.checked_add(d))
                .ok_or_else(|| invalid("it is too long"))?;
        }
        Ok(VirtualDuration(total))
    }
}

impl<'de> Deserialize<'de> for VirtualDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        VirtualDuration::parse(&text).map_err(de::Error::custom)
    }
}

/// Go's way of printing a duration: `0s`, `250ms`, `4m0s`, `1h30m0s`, `1.5s`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let (h, m, s, frac) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let secs = if frac == 0 {
        format!("{s}s")
    } else {
        format!("{s}.{}s", format!("{frac:03}").trim_end_matches('0'))
    };
    match (h, m) {
        (0, 0) => secs,
        (0, m) => format!("{m}m{secs}"),
        (h, m) => format!("{h}h{m}m{secs}"),
    }
}

impl fmt::Display for VirtualDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case("30s", 30_000)]
    #[case("4m", 240_000)]
    #[case("1h30m", 5_400_000)]
    #[case("250ms", 250)]
    #[case("1m30s500ms", 90_500)]
    fn parses_go_style_durations(#[case] text: &str, #[case] ms: u64) {
        assert_eq!(
            VirtualDuration::parse(text).unwrap().0,
            Duration::from_millis(ms)
        );
    }

    #[rstest]
    #[case("", "it is empty")]
    #[case("4", "needs a unit")]
    #[case("4x", "unknown unit `x`")]
    #[case("m", "expected a number")]
    fn rejects_bad_durations_saying_why(#[case] text: &str, #[case] why: &str) {
        let err = VirtualDuration::parse(text).unwrap_err();
        assert!(err.contains(why), "{err}");
    }

    #[rstest]
    #[case(0, "0s")]
    #[case(250, "250ms")]
    #[case(1_500, "1.5s")]
    #[case(240_000, "4m0s")]
    #[case(5_400_000, "1h30m0s")]
    fn prints_like_go(#[case] ms: u64, #[case] text: &str) {
        assert_eq!(format_duration(Duration::from_millis(ms)), text);
    }
}
