//! Names of the objects the check creates, as Kueue names them: the ProvisioningRequest
//! `{workload}-{check}-{attempt}` and its PodTemplates `ppt-{request}-{podset}`. A name longer than
//! 247 characters keeps its first 247 and ends with `-` and the first 5 hex digits of the SHA-1
//! of the whole name: 253 characters, the most a name may have, and still unique.

use sha1::{Digest, Sha1};

/// Characters of a hashed name's digest suffix.
const HASH_LENGTH: usize = 5;
/// The longest name kept whole, and the characters kept of a longer one (252 less the hash).
const MAX_PREFIX_LENGTH: usize = 252 - HASH_LENGTH;
const POD_TEMPLATE_PREFIX: &str = "ppt";

/// The request of a workload's check for an attempt (attempts count from 1).
pub fn request_name(workload: &str, check: &str, attempt: u32) -> String {
    limit(format!("{workload}-{check}-{attempt}"))
}

/// The PodTemplate of a request's podset.
pub fn pod_template_name(request: &str, pod_set: &str) -> String {
    limit(format!("{POD_TEMPLATE_PREFIX}-{request}-{pod_set}"))
}

/// The highest attempt looked for in a hashed name (its number is inside the hash).
const MAX_HASHED_ATTEMPT: u32 = 1024;

/// The attempt a request's name stands for, if it is one of this workload's check's requests.
/// A name too long to keep whole hides its attempt in the hash, so the attempts are tried in
/// turn; Kueue matches the shortened prefix and never finds such a request its own, deleting and
/// recreating it on every reconcile.
pub fn attempt_of(request: &str, workload: &str, check: &str) -> Option<u32> {
    let full_prefix = format!("{workload}-{check}-");
    let whole = request
        .strip_prefix(&full_prefix)
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse().ok());
    if whole.is_some() || full_prefix.len() + 2 <= MAX_PREFIX_LENGTH {
        return whole;
    }
    (1..=MAX_HASHED_ATTEMPT).find(|n| request_name(workload, check, *n) == request)
}

fn limit(full: String) -> String {
    // Names are DNS subdomains (ASCII), so byte and character positions agree; a name that is
    // not ASCII is cut at the nearest character boundary below the limit.
    if full.len() <= MAX_PREFIX_LENGTH {
        return full;
    }
    let mut cut = MAX_PREFIX_LENGTH;
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    let digest = Sha1::digest(full.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}", &full[..cut], &hex[..HASH_LENGTH])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::first_attempt("job-train-3f2a1", "prov", 1, "job-train-3f2a1-prov-1")]
    #[case::third_attempt("wl", "check", 3, "wl-check-3")]
    fn request_names_carry_the_attempt(
        #[case] workload: &str,
        #[case] check: &str,
        #[case] attempt: u32,
        #[case] want: &str,
    ) {
        assert_eq!(request_name(workload, check, attempt), want);
        assert_eq!(attempt_of(want, workload, check), Some(attempt));
    }

    #[test]
    fn pod_templates_are_named_after_request_and_podset() {
        assert_eq!(
            pod_template_name("wl-check-1", "main"),
            "ppt-wl-check-1-main"
        );
    }

    #[test]
    fn long_names_keep_247_characters_and_a_hash_of_the_whole() {
        let workload = "w".repeat(250);
        let name = request_name(&workload, "check", 1);
        assert_eq!(name.len(), 253);
        assert_eq!(&name[..247], &workload[..247]);
        assert_eq!(&name[247..248], "-");
        // The suffix is the SHA-1 of the full name, so other attempts get other names.
        let full = format!("{workload}-check-1");
        let digest = Sha1::digest(full.as_bytes());
        assert_eq!(
            &name[248..],
            &format!("{:02x}{:02x}{:02x}", digest[0], digest[1], digest[2])[..5]
        );
        assert_ne!(name, request_name(&workload, "check", 2));
    }

    #[test]
    fn a_hashed_name_is_still_known_as_its_attempt() {
        let workload = "w".repeat(250);
        for attempt in [1, 2, 4] {
            let name = request_name(&workload, "check", attempt);
            assert_eq!(attempt_of(&name, &workload, "check"), Some(attempt));
        }
        assert_eq!(attempt_of("other", &workload, "check"), None);
    }

    #[test]
    fn a_247_character_name_is_kept_whole_and_one_more_is_hashed() {
        let workload = "w".repeat(247 - "-c-1".len());
        assert_eq!(request_name(&workload, "c", 1), format!("{workload}-c-1"));
        let longer = format!("{workload}w");
        let hashed = request_name(&longer, "c", 1);
        assert_eq!(hashed.len(), 253);
        assert!(!hashed.ends_with("-c-1"));
    }

    #[rstest]
    #[case::other_check("wl-other-1", "wl", "check")]
    #[case::other_workload("wl2-check-1", "wl", "check")]
    #[case::no_digits("wl-check-", "wl", "check")]
    #[case::not_a_number("wl-check-1a", "wl", "check")]
    #[case::a_longer_workload_name("wl-check-check-1", "wl", "check")]
    fn requests_of_other_workloads_or_checks_have_no_attempt(
        #[case] request: &str,
        #[case] workload: &str,
        #[case] check: &str,
    ) {
        assert_eq!(attempt_of(request, workload, check), None);
    }
}
