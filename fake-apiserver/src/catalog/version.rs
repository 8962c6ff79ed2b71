//! Kubernetes API version ordering (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > anything else).

/// A sort key: smaller sorts first, so the preferred version is the minimum.
pub fn version_priority(version: &str) -> (u8, i64, i64, String) {
    let Some(rest) = version.strip_prefix('v') else {
        return (3, 0, 0, version.to_string());
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<i64>() else {
        return (3, 0, 0, version.to_string());
    };
    let tail = &rest[digits.len()..];
    let (stage, minor_text) = if tail.is_empty() {
        (0, "")
    } else if let Some(m) = tail.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = tail.strip_prefix("alpha") {
        (2, m)
    } else {
        return (3, 0, 0, version.to_string());
    };
    let minor = if minor_text.is_empty() {
        0
    } else {
        minor_text.parse::<i64>().unwrap_or(-1)
    };
    if minor < 0 {
        return (3, 0, 0, version.to_string());
    }
    (stage, -major, -minor, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_like_kubernetes() {
        let mut v = vec![
            "v1alpha1", "foo", "v1", "v1beta2", "v2", "v1beta1", "v10", "v2beta1",
        ];
        v.sort_by_key(|s| version_priority(s));
        assert_eq!(
            v,
            vec![
                "v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"
            ]
        );
    }
}
