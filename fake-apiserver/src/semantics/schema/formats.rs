//! The string formats the real server checks (kube-openapi's strfmt registry); unknown
//! formats (and number formats such as `int32`, `int64`, `double`) are not checked.

use std::sync::LazyLock;

use regex::Regex;

fn re(p: &str) -> Option<Regex> {
    Regex::new(p).ok()
}

static DATE_TIME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$")
});
static DATE: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^(\d{4})-(\d{2})-(\d{2})$"));
static UUID: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static BASE64: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"));
static EMAIL: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"^[^@\s<>()]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$"));
static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$",
    )
});
static MAC: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"^(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$"));

fn matches(r: &LazyLock<Option<Regex>>, s: &str) -> bool {
    r.as_ref().is_none_or(|r| r.is_match(s))
}

fn ymd_ok(s: &str) -> bool {
    let mut parts = s.splitn(3, '-').map(|p| p.parse::<u32>().unwrap_or(0));
    let (_, m, d) = (parts.next(), parts.next(), parts.next());
    matches!(m, Some(1..=12)) && matches!(d, Some(1..=31))
}

/// Whether `s` is valid for `format`.
pub(super) fn valid(format: &str, s: &str) -> bool {
    match format {
        "date-time" | "datetime" => {
            matches(&DATE_TIME, s) && s.len() >= 10 && ymd_ok(&s[..10]) && {
                let hms: Vec<u32> = s[11..19.min(s.len())]
                    .split(':')
                    .map(|x| x.parse().unwrap_or(99))
                    .collect();
                hms.len() == 3 && hms[0] < 24 && hms[1] < 60 && hms[2] < 61
            }
        }
        "date" => matches(&DATE, s) && ymd_ok(s),
        "byte" => matches(&BASE64, s),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => matches(&UUID, s),
        "email" => matches(&EMAIL, s),
        "hostname" => s.len() <= 255 && matches(&HOSTNAME, s),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => s.split_once('/').is_some_and(|(ip, bits)| {
            let max = if ip.contains(':') { 128 } else { 32 };
            ip.parse::<std::net::IpAddr>().is_ok() && bits.parse::<u32>().is_ok_and(|b| b <= max)
        }),
        "mac" => matches(&MAC, s),
        _ => true,
    }
}
