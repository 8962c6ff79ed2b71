//! Leases, and the `MicroTime` fields kube-apiserver's decoder reads with a fixed layout (exactly
//! six fractional digits), refusing anything else with Go's `time.Parse` error.

use serde_json::Value;

use super::invalid_rendered;
use crate::error::FieldCause;

pub fn lease(lease: &Value) -> Vec<FieldCause> {
    let spec = &lease["spec"];
    let mut causes = Vec::new();
    if let Some(d) = spec["leaseDurationSeconds"].as_i64().filter(|d| *d <= 0) {
        causes.push(invalid_rendered(
            "spec.leaseDurationSeconds",
            &d.to_string(),
            "must be greater than 0",
        ));
    }
    if let Some(t) = spec["leaseTransitions"].as_i64().filter(|t| *t < 0) {
        causes.push(invalid_rendered(
            "spec.leaseTransitions",
            &t.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    causes
}

const LAYOUT: &str = "2006-01-02T15:04:05.000000Z07:00";

/// The MicroTime fields of each kind that has them.
fn microtime_fields(group: &str, kind: &str) -> &'static [&'static [&'static str]] {
    match (group, kind) {
        ("coordination.k8s.io", "Lease") => &[&["spec", "acquireTime"], &["spec", "renewTime"]],
        ("coordination.k8s.io", "LeaseCandidate") => {
            &[&["spec", "pingTime"], &["spec", "renewTime"]]
        }
        ("" | "events.k8s.io", "Event") => &[&["eventTime"], &["series", "lastObservedTime"]],
        _ => &[],
    }
}

/// Go's decoding error for the first MicroTime of `obj` its layout does not parse.
pub fn microtime_error(group: &str, kind: &str, obj: &Value) -> Option<String> {
    microtime_fields(group, kind).iter().find_map(|path| {
        let v = path.iter().try_fold(obj, |v, k| v.get(*k))?;
        parse_microtime(v.as_str()?).err()
    })
}

/// Go's `time.Parse(LAYOUT, value)`: Ok, or its error message.
fn parse_microtime(value: &str) -> Result<(), String> {
    let quote = |s: &str| Value::from(s).to_string();
    let cannot = |rest: &str, elem: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(value),
            quote(LAYOUT),
            quote(rest),
            quote(elem)
        )
    };
    let range = |what: &str| format!("parsing time {}: {what} out of range", quote(value));
    let digit = |s: &str, i: usize| s.as_bytes().get(i).is_some_and(u8::is_ascii_digit);
    // Go's getnum: one or two digits, exactly two when fixed.
    let getnum = |s: &str, fixed: bool| -> Option<(u32, usize)> {
        if !digit(s, 0) {
            return None;
        }
        let first = u32::from(s.as_bytes()[0] - b'0');
        if !digit(s, 1) {
            return (!fixed).then_some((first, 1));
        }
        Some((first * 10 + u32::from(s.as_bytes()[1] - b'0'), 2))
    };
    let mut rest = value;
    // Year.
    if rest.len() < 4 || !digit(rest, 0) || !rest.as_bytes()[..4].iter().all(u8::is_ascii_digit) {
        return Err(cannot(rest, "2006"));
    }
    let year: i64 = rest[..4].parse().unwrap_or(0);
    rest = &rest[4..];
    let mut numbers = [0u32; 5];
    let steps: [(&str, &str, bool, u32, &str); 5] = [
        ("-", "01", true, 12, "month"),
        ("-", "02", true, 99, "day"),
        ("T", "15", false, 23, "hour"),
        (":", "04", true, 59, "minute"),
        (":", "05", true, 59, "second"),
    ];
    for (i, (sep, elem, fixed, max, what)) in steps.iter().enumerate() {
        match rest.strip_prefix(sep) {
            Some(r) => rest = r,
            None => return Err(cannot(rest, sep)),
        }
        let (n, used) = getnum(rest, *fixed).ok_or_else(|| cannot(rest, elem))?;
        if n > *max || (*what == "month" && n == 0) {
            return Err(range(what));
        }
        numbers[i] = n;
        rest = &rest[used..];
    }
    // Exactly six fractional digits.
    let frac_ok = rest.len() >= 7
        && matches!(rest.as_bytes()[0], b'.' | b',')
        && rest.as_bytes()[1..7].iter().all(u8::is_ascii_digit);
    if !frac_ok {
        return Err(cannot(rest, ".000000"));
    }
    rest = &rest[7..];
    // Zone: Z or ±hh:mm.
    if let Some(r) = rest.strip_prefix('Z') {
        rest = r;
    } else {
        let b = rest.as_bytes();
        let ok = b.len() >= 6
            && matches!(b[0], b'+' | b'-')
            && b[3] == b':'
            && [1, 2, 4, 5].iter().all(|i| b[*i].is_ascii_digit());
        if !ok {
            return Err(cannot(rest, "Z07:00"));
        }
        let hh = u32::from(b[1] - b'0') * 10 + u32::from(b[2] - b'0');
        let mm = u32::from(b[4] - b'0') * 10 + u32::from(b[5] - b'0');
        if hh > 24 {
            return Err(range("time zone offset hour"));
        }
        if mm > 60 {
            return Err(range("time zone offset minute"));
        }
        rest = &rest[6..];
    }
    if !rest.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            quote(value),
            quote(rest)
        ));
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match numbers[0] {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if numbers[1] < 1 || numbers[1] > days {
        return Err(range("day"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn microtimes_need_six_digits() {
        assert_eq!(parse_microtime("2026-01-02T03:04:05.123456Z"), Ok(()));
        assert_eq!(parse_microtime("2026-01-02T03:04:05.123456+01:00"), Ok(()));
        let err = |v: &str| parse_microtime(v).unwrap_err();
        assert_eq!(
            err("2026-01-02T03:04:06.5Z"),
            r#"parsing time "2026-01-02T03:04:06.5Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".5Z" as ".000000""#
        );
        assert_eq!(
            err("yesterday"),
            r#"parsing time "yesterday" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "yesterday" as "2006""#
        );
        assert_eq!(
            err("2026-01-02T03:04:06.1234567Z"),
            r#"parsing time "2026-01-02T03:04:06.1234567Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "7Z" as "Z07:00""#
        );
        assert_eq!(
            err("2026-13-02T03:04:06.123456Z"),
            r#"parsing time "2026-13-02T03:04:06.123456Z": month out of range"#
        );
        assert_eq!(
            err("2026-02-30T03:04:06.123456Z"),
            r#"parsing time "2026-02-30T03:04:06.123456Z": day out of range"#
        );
    }

    #[test]
    fn lease_ranges_and_fields() {
        let l =
            json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -2, "renewTime": "x"}});
        let causes: Vec<String> = lease(&l).into_iter().map(|c| c.message).collect();
        assert_eq!(
            causes,
            [
                "Invalid value: 0: must be greater than 0",
                "Invalid value: -2: must be greater than or equal to 0"
            ]
        );
        assert!(microtime_error("coordination.k8s.io", "Lease", &l).is_some());
        assert!(microtime_error("", "ConfigMap", &l).is_none());
    }
}
