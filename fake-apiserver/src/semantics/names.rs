//! Name, label-key and label-value validation worded like apimachinery
//! (Kubernetes 1.37), so clients that match on error text see what a real
//! kube-apiserver would send.
//!
//! Two wordings of the length error coexist upstream and are kept here:
//! the DNS name checks (`util/validation`) say "characters", while the
//! label key/value checks (`api/validate/content`) say "bytes". Lengths are
//! counted in bytes in both cases, as Go's `len` does.

/// How many random characters `generateName` appends.
const GENERATE_NAME_SUFFIX_LEN: usize = 5;

/// The apiserver truncates a `generateName` base to this many bytes so that
/// base + 5-char suffix fits a 63-byte name (`MaxGeneratedNameLength`).
pub const MAX_GENERATE_NAME_PREFIX: usize = 63 - GENERATE_NAME_SUFFIX_LEN;

/// Kubernetes' suffix alphabet: no vowels and no look-alike digits, so
/// generated names never spell words or confuse readers.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

const DNS1123_LABEL_MAX_LEN: usize = 63;
const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;
const LABEL_KEY_NAME_MAX_LEN: usize = 63;
const LABEL_VALUE_MAX_LEN: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Which upstream package's length wording to use (see module docs).
#[derive(Clone, Copy)]
enum LenUnit {
    Characters,
    Bytes,
}

fn max_len_error(max: usize, unit: LenUnit) -> String {
    let unit = match unit {
        LenUnit::Characters => "characters",
        LenUnit::Bytes => "bytes",
    };
    format!("must be no more than {max} {unit}")
}

/// Upstream's `RegexError`, including its quirk: every example is followed by
/// "', ", so several examples read `'a',  or 'b', regex ...`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = String::from(msg);
    out.push_str(" (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

/// Non-empty, only `allowed` bytes, alphanumeric at both ends: the shape
/// shared by every regex above, checked without a regex engine.
fn matches_shape(value: &str, alnum: fn(&u8) -> bool, allowed: fn(&u8) -> bool) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => alnum(first) && alnum(last) && bytes.iter().all(allowed),
        _ => false,
    }
}

fn is_lower_alnum(b: &u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn matches_dns1123_label(value: &str) -> bool {
    matches_shape(value, is_lower_alnum, |b| is_lower_alnum(b) || *b == b'-')
}

fn matches_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(matches_dns1123_label)
}

fn matches_label_key_name(value: &str) -> bool {
    matches_shape(value, u8::is_ascii_alphanumeric, |b| {
        b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
    })
}

fn dns1123_subdomain(value: &str, unit: LenUnit) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LEN {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LEN, unit));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Object names of most kinds (`metadata.name`), max 253.
#[must_use]
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    dns1123_subdomain(value, LenUnit::Characters)
}

/// Names that must also be DNS labels (namespaces, services), max 63.
#[must_use]
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LEN {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LEN, LenUnit::Characters));
    }
    if !matches_dns1123_label(value) {
        // Upstream singles out "valid subdomain, but has dots".
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Names of Services (DNS-1035 labels): like a DNS label, but starting with a letter.
#[must_use]
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LEN {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LEN, LenUnit::Characters));
    }
    let starts_with_letter = value.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    if !(starts_with_letter && matches_dns1123_label(value)) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Names of kinds with loose naming, which only need to survive as one URL
/// path segment. Like upstream, empty and long names are not rejected here.
#[must_use]
pub fn is_path_segment_name(value: &str) -> Vec<String> {
    if value == "." || value == ".." {
        return vec![format!("may not be '{value}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| value.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Label and annotation keys: `[prefix/]name`, prefix a DNS subdomain,
/// name at most 63 bytes.
#[must_use]
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix, LenUnit::Bytes)
                        .into_iter()
                        .map(|msg| format!("prefix part {msg}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_ERR,
                    LABEL_KEY_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_KEY_NAME_MAX_LEN {
        errs.push(format!(
            "name part {}",
            max_len_error(LABEL_KEY_NAME_MAX_LEN, LenUnit::Bytes)
        ));
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Label values: empty, or a label-key name part of at most 63 bytes.
#[must_use]
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LEN {
        errs.push(max_len_error(LABEL_VALUE_MAX_LEN, LenUnit::Bytes));
    }
    if !value.is_empty() && !matches_label_key_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// The random part of a `generateName` name. `rng(n)` must return a value
/// in `0..n`; taking it from the caller keeps the server deterministic.
#[must_use]
pub fn generate_name_suffix(rng: &mut impl FnMut(usize) -> usize) -> String {
    (0..GENERATE_NAME_SUFFIX_LEN)
        .map(|_| {
            let idx = rng(SUFFIX_ALPHABET.len()) % SUFFIX_ALPHABET.len();
            char::from(SUFFIX_ALPHABET[idx])
        })
        .collect()
}

/// A version 4 UUID made of 16 random bytes, as uids are written.
pub fn uuid_from(b: [u8; 16]) -> String {
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        u16::from_be_bytes([b[4], b[5]]),
        u16::from_be_bytes([b[6], b[7]]) & 0x0fff,
        (u16::from_be_bytes([b[8], b[9]]) & 0x3fff) | 0x8000,
        u64::from_be_bytes([0, 0, b[10], b[11], b[12], b[13], b[14], b[15]]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const TOO_MANY_SLASHES_MSG: &str = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
    const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn s(n: usize, c: char) -> String {
        std::iter::repeat_n(c, n).collect()
    }

    #[rstest]
    #[case::simple("example.com")]
    #[case::single_char("a")]
    #[case::digits("123")]
    #[case::hyphens("a-b--c.d-e")]
    #[case::max_len(format!("{}.{}.{}.{}", s(63, 'a'), s(63, 'b'), s(63, 'c'), s(61, 'd')))]
    fn subdomain_valid(#[case] value: String) {
        assert_eq!(is_dns1123_subdomain(&value), Vec::<String>::new());
    }

    #[rstest]
    #[case::empty("")]
    #[case::upper("Example.com")]
    #[case::leading_dot(".a")]
    #[case::trailing_dot("a.")]
    #[case::double_dot("a..b")]
    #[case::leading_hyphen("-a")]
    #[case::hyphen_before_dot("a-.b")]
    #[case::underscore("a_b")]
    #[case::slash("a/b")]
    #[case::non_ascii("café")]
    fn subdomain_bad_shape(#[case] value: &str) {
        assert_eq!(is_dns1123_subdomain(value), vec![SUBDOMAIN_MSG.to_owned()]);
    }

    #[rstest]
    #[case::long_valid_shape(s(254, 'a'), vec!["must be no more than 253 characters"])]
    #[case::long_bad_shape(
        format!("{}-", s(253, 'a')),
        vec!["must be no more than 253 characters", SUBDOMAIN_MSG]
    )]
    fn subdomain_too_long(#[case] value: String, #[case] want: Vec<&str>) {
        assert_eq!(is_dns1123_subdomain(&value), want);
    }

    #[rstest]
    #[case::simple("my-name", vec![])]
    #[case::digits_first("123-abc", vec![])]
    #[case::max_len(s(63, 'a'), vec![])]
    #[case::too_long(s(64, 'a'), vec!["must be no more than 63 characters"])]
    #[case::dots("a.b", vec!["must not contain dots"])]
    #[case::too_long_with_dots(
        format!("{}.b", s(63, 'a')),
        vec!["must be no more than 63 characters", "must not contain dots"]
    )]
    #[case::empty("", vec![LABEL_MSG])]
    #[case::upper("My-name", vec![LABEL_MSG])]
    #[case::trailing_hyphen("a-", vec![LABEL_MSG])]
    #[case::trailing_dot("a.", vec![LABEL_MSG])]
    fn dns1123_label(#[case] value: impl AsRef<str>, #[case] want: Vec<&str>) {
        assert_eq!(is_dns1123_label(value.as_ref()), want);
    }

    #[rstest]
    #[case::plain("anything-Goes_here:1", vec![])]
    #[case::empty("", vec![])]
    #[case::dots_inside("...", vec![])]
    #[case::dot(".", vec!["may not be '.'"])]
    #[case::dotdot("..", vec!["may not be '..'"])]
    #[case::slash("a/b", vec!["may not contain '/'"])]
    #[case::percent("a%b", vec!["may not contain '%'"])]
    #[case::both("%/", vec!["may not contain '/'", "may not contain '%'"])]
    fn path_segment_name(#[case] value: &str, #[case] want: Vec<&str>) {
        assert_eq!(is_path_segment_name(value), want);
    }

    #[rstest]
    #[case::simple("app")]
    #[case::mixed_case("MyName")]
    #[case::inner_punct("my.name_x-y")]
    #[case::prefixed("example.com/MyName")]
    #[case::k8s_prefix("app.kubernetes.io/name")]
    #[case::max_name(format!("example.com/{}", s(63, 'a')))]
    fn qualified_name_valid(#[case] value: String) {
        assert_eq!(is_qualified_name(&value), Vec::<String>::new());
    }

    #[rstest]
    #[case::empty("", vec!["name part must be non-empty", NAME_PART_MSG])]
    #[case::bad_start("-app", vec![NAME_PART_MSG])]
    #[case::bad_end("app_", vec![NAME_PART_MSG])]
    #[case::space("my app", vec![NAME_PART_MSG])]
    #[case::too_long(s(64, 'a'), vec!["name part must be no more than 63 bytes"])]
    #[case::empty_prefix("/app", vec!["prefix part must be non-empty"])]
    #[case::empty_name(
        "example.com/",
        vec!["name part must be non-empty", NAME_PART_MSG]
    )]
    #[case::upper_prefix(
        "Example.com/app",
        vec![format!("prefix part {SUBDOMAIN_MSG}")]
    )]
    #[case::long_prefix(
        format!("{}/app", s(254, 'a')),
        vec!["prefix part must be no more than 253 bytes"]
    )]
    #[case::two_slashes("a/b/c", vec![TOO_MANY_SLASHES_MSG])]
    fn qualified_name_invalid(#[case] value: impl AsRef<str>, #[case] want: Vec<impl AsRef<str>>) {
        let want: Vec<&str> = want.iter().map(AsRef::as_ref).collect();
        assert_eq!(is_qualified_name(value.as_ref()), want);
    }

    #[rstest]
    #[case::empty("", vec![])]
    #[case::simple("MyValue", vec![])]
    #[case::punct("my_value-1.2", vec![])]
    #[case::max_len(s(63, 'z'), vec![])]
    #[case::too_long(s(64, 'z'), vec!["must be no more than 63 bytes"])]
    #[case::too_long_bad(
        format!("{}-", s(63, 'z')),
        vec!["must be no more than 63 bytes", LABEL_VALUE_MSG]
    )]
    #[case::bad_start("_x", vec![LABEL_VALUE_MSG])]
    #[case::slash("a/b", vec![LABEL_VALUE_MSG])]
    fn label_value(#[case] value: impl AsRef<str>, #[case] want: Vec<&str>) {
        assert_eq!(is_valid_label_value(value.as_ref()), want);
    }

    #[rstest]
    #[case::all_first(0, "bbbbb")]
    #[case::all_last(26, "99999")]
    #[case::out_of_range_is_wrapped(27, "bbbbb")]
    fn suffix_constant_rng(#[case] pick: usize, #[case] want: &str) {
        assert_eq!(generate_name_suffix(&mut |_| pick), want);
    }

    #[test]
    fn suffix_uses_whole_alphabet_and_asks_for_its_size() {
        let mut next = 0;
        let mut asked = Vec::new();
        let mut rng = |n: usize| {
            asked.push(n);
            next += 1;
            next - 1
        };
        let all: String = (0..6).map(|_| generate_name_suffix(&mut rng)).collect();
        assert_eq!(&all[..27], "bcdfghjklmnpqrstvwxz2456789");
        assert!(asked.iter().all(|&n| n == 27));
        assert_eq!(asked.len(), 30);
    }

    #[test]
    fn generated_name_from_max_prefix_is_a_valid_label() {
        assert_eq!(MAX_GENERATE_NAME_PREFIX, 58);
        let name = format!(
            "{}{}",
            s(MAX_GENERATE_NAME_PREFIX, 'p'),
            generate_name_suffix(&mut |n| n - 1)
        );
        assert_eq!(name.len(), 63);
        assert!(is_dns1123_label(&name).is_empty());
    }

    #[test]
    fn service_names_are_dns1035_labels() {
        assert!(is_dns1035_label("my-svc").is_empty());
        assert_eq!(
            is_dns1035_label("1abc"),
            vec![
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(
            is_dns1035_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }
}
