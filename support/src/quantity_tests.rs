//! Quantity parsing, arithmetic, unit conversion and formatting against apimachinery's and Kueue's
//! observable behaviour.
#![allow(clippy::unwrap_used)]

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use rstest::rstest;

use crate::quantity::{
    Amount, QuantityErrorKind, Requests, add_requests, format_units, quantity, scale_requests,
    to_quantities, to_units,
};

const G: i128 = 1_000_000_000;
const BINARY_CAP: i128 = i64::MAX as i128 * G;

fn amount(text: &str) -> Amount {
    Amount::parse(text).unwrap()
}

#[rstest]
#[case::zero("0", 0)]
#[case::plain("1", G)]
#[case::plus_sign("+1", G)]
#[case::minus_sign("-1", -G)]
#[case::leading_zeros("007", 7 * G)]
#[case::decimal("1.5", 1_500_000_000)]
#[case::decimal_without_integer_part(".5", 500_000_000)]
#[case::decimal_without_fraction_digits("1.", G)]
#[case::negative_decimal("-1.025", -1_025_000_000)]
#[case::nano("5n", 5)]
#[case::micro("4u", 4_000)]
#[case::milli("3m", 3_000_000)]
#[case::kilo("8k", 8_000 * G)]
#[case::mega("7M", 7_000_000 * G)]
#[case::giga("6G", 6_000_000_000 * G)]
#[case::tera("5T", 5_000_000_000_000 * G)]
#[case::peta("2P", 2_000_000_000_000_000 * G)]
#[case::exa("1E", 1_000_000_000_000_000_000 * G)]
#[case::exa_above_int64("12E", 12_000_000_000_000_000_000 * G)]
#[case::kibi("1Ki", 1024 * G)]
#[case::mebi("7Mi", 7 * (1 << 20) * G)]
#[case::gibi("6Gi", 6 * (1 << 30) * G)]
#[case::tebi("5Ti", 5 * (1 << 40) * G)]
#[case::pebi("4Pi", 4 * (1 << 50) * G)]
#[case::exbi("3Ei", 3 * (1 << 60) * G)]
#[case::fractional_binary("100.035Ki", 102_435_840_000_000)]
#[case::half_mebi("0.5Mi", 524_288 * G)]
#[case::decimal_with_suffix("10.035M", 10_035_000 * G)]
#[case::exponent_lower("1e3", 1_000 * G)]
#[case::exponent_upper_negative("1E-3", 1_000_000)]
#[case::exponent_twelve_tenths("12E-1", 1_200_000_000)]
#[case::exponent_with_plus("1.3E+6", 1_300_000 * G)]
#[case::exponent_with_decimal("1.53E12", 1_530_000_000_000 * G)]
#[case::sub_nano_rounds_up("0.0000000001", 1)]
#[case::sub_nano_fraction_rounds_up("3.001n", 4)]
#[case::sub_nano_exponent_rounds_up("0.5e-9", 1)]
#[case::many_fraction_digits_round_up("0.00000012345", 124)]
#[case::negative_sub_nano_rounds_away_from_zero("-0.9n", -1)]
#[case::tiny_binary_rounds_up("0.000000000001Ki", 2)]
#[case::tiny_exponent_rounds_up_to_one_nano("1e-999", 1)]
#[case::exponent_truncated_to_int32_like_go("1e4294967297", 10 * G)]
#[case::int32_exponent_wraps_like_go("1e-2147483648", i128::MAX)]
#[case::binary_capped_at_int64("9Ei", BINARY_CAP)]
#[case::binary_capped_long_form("9223372036854775807Ki", BINARY_CAP)]
#[case::negative_binary_capped("-9Ei", -BINARY_CAP)]
#[case::decimal_above_int64_not_capped("10E", 10_000_000_000_000_000_000 * G)]
#[case::beyond_amount_range_saturates("1e30", i128::MAX)]
#[case::negative_beyond_range_saturates("-1e99", -i128::MAX)]
#[case::bare_point_is_zero_like_go(".", 0)]
#[case::bare_sign_is_zero_like_go("-", 0)]
#[case::suffix_without_number_is_zero_like_go("Ki", 0)]
fn parse_reads_every_kubernetes_form_exactly(#[case] text: &str, #[case] nanos: i128) {
    assert_eq!(Amount::parse(text).unwrap().nanos(), nanos, "{text}");
}

#[rstest]
#[case::empty("", QuantityErrorKind::Format)]
#[case::two_points("1.1.M", QuantityErrorKind::Format)]
#[case::sign_inside("1+1.0M", QuantityErrorKind::Format)]
#[case::unknown_letters("0.1am", QuantityErrorKind::Format)]
#[case::word("aoeu", QuantityErrorKind::Format)]
#[case::leading_space(" 1", QuantityErrorKind::Format)]
#[case::trailing_space("1 ", QuantityErrorKind::Format)]
#[case::milli_binary("0.1mi", QuantityErrorKind::Suffix)]
#[case::bare_i(".5i", QuantityErrorKind::Suffix)]
#[case::one_i("1i", QuantityErrorKind::Suffix)]
#[case::negative_i("-3.01i", QuantityErrorKind::Suffix)]
#[case::exponent_without_digits("-3.01e-", QuantityErrorKind::Suffix)]
#[case::capital_k("1K", QuantityErrorKind::Suffix)]
#[case::bare_e("1e", QuantityErrorKind::Suffix)]
#[case::exponent_overflowing_int64("1e99999999999999999999", QuantityErrorKind::Suffix)]
#[case::no_digits_small_exponent("e-10", QuantityErrorKind::Numeric)]
#[case::no_digits_large_binary("Ei", QuantityErrorKind::Numeric)]
fn parse_rejects_what_kubernetes_rejects(#[case] text: &str, #[case] kind: QuantityErrorKind) {
    let error = Amount::parse(text).unwrap_err();
    assert_eq!(error.kind, kind, "{text}");
    assert_eq!(error.text, text);
}

#[test]
fn parse_error_names_the_text_and_the_reason() {
    assert_eq!(
        Amount::parse("abc").unwrap_err().to_string(),
        "invalid quantity \"abc\": quantities must match the regular expression \
         '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        Amount::parse("1Q").unwrap_err().to_string(),
        "invalid quantity \"1Q\": quantities must match the regular expression \
         '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        Amount::parse("1K").unwrap_err().to_string(),
        "invalid quantity \"1K\": unable to parse quantity's suffix"
    );
    assert_eq!(
        Amount::parse("e-10").unwrap_err().to_string(),
        "invalid quantity \"e-10\": unable to parse numeric part of quantity"
    );
}

#[test]
fn parse_never_panics_on_arbitrary_text() {
    const ALPHABET: &[&str] = &[
        "0",
        "1",
        "9",
        ".",
        "+",
        "-",
        "e",
        "E",
        "i",
        "n",
        "u",
        "m",
        "k",
        "K",
        "M",
        "G",
        "T",
        "P",
        "é",
        " ",
        "x",
        "99999999999999999999",
    ];
    // A fixed linear congruential generator keeps the inputs reproducible.
    let mut state: u64 = 0x5eed;
    for _ in 0..20_000 {
        let mut text = String::new();
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        for _ in 0..(state >> 60) {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            text.push_str(ALPHABET[(state >> 33) as usize % ALPHABET.len()]);
        }
        if let Ok(parsed) = Amount::parse(&text) {
            let _ = to_units("cpu", &parsed);
            let _ = parsed.saturating_mul(&parsed).to_canonical_string();
        }
    }
}

#[test]
fn very_long_numbers_parse_exactly_and_quickly() {
    let tiny = format!("0.{}1Ki", "0".repeat(100_000));
    assert_eq!(Amount::parse(&tiny).unwrap().nanos(), 1);
    let huge = format!("1{}", "0".repeat(100_000));
    assert_eq!(Amount::parse(&huge).unwrap().nanos(), i128::MAX);
    let exact = format!("{}1.5{}", "0".repeat(50_000), "0".repeat(50_000));
    assert_eq!(Amount::parse(&exact).unwrap(), Amount::from_milli(1500));
}

#[test]
fn from_quantity_ignores_surrounding_whitespace_like_json_decoding() {
    let parsed = Amount::from_quantity(&Quantity(" 2Gi\n".to_owned())).unwrap();
    assert_eq!(parsed, Amount::from_int(2 << 30));
}

#[rstest]
#[case::one_k_and_thousand("1k", "1000")]
#[case::exponent_and_plain("1e3", "1000")]
#[case::binary_and_plain("1Ki", "1024")]
#[case::milli_and_decimal("1500m", "1.5")]
fn equal_values_compare_equal_whatever_the_form(#[case] left: &str, #[case] right: &str) {
    assert_eq!(amount(left), amount(right));
}

#[test]
fn ordering_is_numeric() {
    assert!(amount("999m") < amount("1"));
    assert!(amount("-1") < amount("1n"));
    assert!(amount("1Ki") > amount("1k"));
}

#[rstest]
#[case::milli_times_integer("100m", "3000", "300")]
#[case::mega_times_milli("100M", "3m", "300k")]
#[case::gpu_cores("2", "20", "40")]
#[case::giga_times_integer("5G", "2", "10G")]
#[case::fractions("1.5", "1.5", "2250m")]
#[case::negative_factor("2", "-1024", "-2048")]
#[case::past_int64("1e10", "1e10", "100E")]
#[case::zero("0", "5G", "0")]
#[case::sub_nano_positive_rounds_up("1n", "1n", "1n")]
#[case::sub_nano_negative_rounds_towards_zero("-1n", "1n", "0")]
fn saturating_mul_is_the_exact_decimal_product(
    #[case] left: &str,
    #[case] right: &str,
    #[case] product: &str,
) {
    assert_eq!(
        amount(left)
            .saturating_mul(&amount(right))
            .to_canonical_string(),
        product
    );
    assert_eq!(
        amount(right)
            .saturating_mul(&amount(left))
            .to_canonical_string(),
        product
    );
}

#[test]
fn saturating_mul_saturates_past_the_range() {
    let huge = amount("1e20");
    assert_eq!(huge.saturating_mul(&huge).nanos(), i128::MAX);
    assert_eq!(huge.saturating_mul(&amount("-1e20")).nanos(), -i128::MAX);
}

#[test]
fn addition_saturates_or_reports_overflow() {
    let max = Amount::from_nanos(i128::MAX);
    assert_eq!(max.saturating_add(&amount("1")), max);
    assert_eq!(max.checked_add(&amount("1n")), None);
    let min = Amount::from_nanos(i128::MIN);
    assert_eq!(min.nanos(), -i128::MAX, "the range is symmetric");
    assert_eq!(min.saturating_add(&amount("-1")), min);
    assert_eq!(min.checked_add(&amount("-1n")), None);
    assert_eq!(
        amount("1.5").checked_add(&amount("500m")),
        Some(amount("2"))
    );
    assert_eq!(
        amount("1").saturating_sub(&amount("1500m")),
        amount("-500m")
    );
}

#[test]
fn integer_multiplication_saturates() {
    assert_eq!(amount("1500m").saturating_mul_int(3), amount("4.5"));
    assert_eq!(amount("1").saturating_mul_int(-2), amount("-2"));
    assert_eq!(
        Amount::from_nanos(i128::MAX).saturating_mul_int(2).nanos(),
        i128::MAX
    );
    assert_eq!(
        Amount::from_nanos(i128::MAX).saturating_mul_int(-2).nanos(),
        -i128::MAX
    );
}

#[test]
fn clamp_and_zero_checks() {
    assert_eq!(amount("-5").clamp_non_negative(), Amount::ZERO);
    assert_eq!(amount("5m").clamp_non_negative(), amount("5m"));
    assert!(amount("0Ki").is_zero());
    assert!(!amount("1n").is_zero());
    assert!(amount("-1n").is_negative());
    assert_eq!(Amount::from_milli(1500), amount("1.5"));
}

#[rstest]
#[case::cpu_milli("cpu", "100m", 100)]
#[case::cpu_whole("cpu", "1.5", 1500)]
#[case::cpu_rounds_up_nano("cpu", "1n", 1)]
#[case::cpu_rounds_up_half_milli("cpu", "0.5m", 1)]
#[case::cpu_negative_rounds_away_from_zero("cpu", "-1.5m", -2)]
#[case::cpu_exact_max("cpu", "9223372036854775807m", i64::MAX)]
#[case::cpu_saturates("cpu", "1E", i64::MAX)]
#[case::cpu_negative_saturates("cpu", "-1E", i64::MIN)]
#[case::memory_whole("memory", "100G", 100_000_000_000)]
#[case::memory_binary("memory", "1Ki", 1024)]
#[case::memory_rounds_up("memory", "1.5", 2)]
#[case::memory_milli_rounds_up("memory", "1m", 1)]
#[case::extended_exact_max("example.com/x", "9223372036854775807", i64::MAX)]
#[case::extended_saturates("example.com/x", "10E", i64::MAX)]
#[case::extended_negative_saturates("example.com/x", "-10E", i64::MIN)]
#[case::binary_cap_is_max("example.com/x", "9Ei", i64::MAX)]
#[case::zero("example.com/x", "0", 0)]
fn to_units_rounds_up_and_saturates(
    #[case] resource: &str,
    #[case] text: &str,
    #[case] units: i64,
) {
    assert_eq!(to_units(resource, &amount(text)), units);
}

#[rstest]
#[case::cpu_zero("cpu", 0, "0")]
#[case::cpu_one_milli("cpu", 1, "1m")]
#[case::cpu_milli("cpu", 100, "100m")]
#[case::cpu_one_and_a_half("cpu", 1500, "1500m")]
#[case::cpu_whole("cpu", 2000, "2")]
#[case::cpu_thousand_cores("cpu", 1_000_000, "1k")]
#[case::cpu_large("cpu", 4_300_000_000, "4300k")]
#[case::cpu_max("cpu", i64::MAX, "9223372036854775807m")]
#[case::cpu_negative("cpu", -1500, "-1500m")]
#[case::cpu_min("cpu", i64::MIN, "-9223372036854775808m")]
#[case::memory_kep_example("memory", 100_000_000_000, "97656250Ki")]
#[case::memory_100m_has_no_binary_factor("memory", 100_000_000, "100000000")]
#[case::memory_thousand_below_1024_is_decimal("memory", 1000, "1k")]
#[case::memory_below_1024_plain("memory", 1023, "1023")]
#[case::memory_512("memory", 512, "512")]
#[case::memory_zero("memory", 0, "0")]
#[case::memory_kibi("memory", 1024, "1Ki")]
#[case::memory_not_a_multiple("memory", 1536, "1536")]
#[case::memory_gibi("memory", 2 << 30, "2Gi")]
#[case::memory_mixed("memory", 1536 << 20, "1536Mi")]
#[case::memory_exbi("memory", 1 << 60, "1Ei")]
#[case::memory_four_exbi("memory", 1 << 62, "4Ei")]
#[case::memory_max("memory", i64::MAX, "9223372036854775807")]
#[case::memory_negative_binary("memory", -2048, "-2Ki")]
#[case::memory_negative_small("memory", -1000, "-1k")]
#[case::memory_min_like_go("memory", i64::MIN, "-9223372036854775808")]
#[case::ephemeral_storage("ephemeral-storage", 1 << 20, "1Mi")]
#[case::hugepages("hugepages-2Mi", 2 << 20, "2Mi")]
#[case::accelerator_memory_kep_example("example.com/accelerator-memory", 20_000_000_000, "20G")]
#[case::unregistered_byte_resource_is_decimal("gpu.memory", 9984 << 20, "10468982784")]
#[case::gpu_1024_is_decimal("nvidia.com/gpu", 1024, "1024")]
#[case::pods_thousand("pods", 1000, "1k")]
#[case::credits("example.com/credits", 300_000, "300k")]
#[case::extended_zero("example.com/gpu", 0, "0")]
#[case::extended_exa("example.com/x", 1_000_000_000_000_000_000, "1E")]
#[case::extended_max("example.com/x", i64::MAX, "9223372036854775807")]
#[case::extended_negative("example.com/x", -5000, "-5k")]
#[case::extended_min("example.com/x", i64::MIN, "-9223372036854775808")]
fn format_units_matches_kueue_resource_quantity(
    #[case] resource: &str,
    #[case] units: i64,
    #[case] expected: &str,
) {
    assert_eq!(format_units(resource, units), expected);
    assert_eq!(quantity(resource, units), Quantity(expected.to_owned()));
}

#[rstest]
#[case::zero("0", "0")]
#[case::giga("20G", "20G")]
#[case::integer("300", "300")]
#[case::fraction("1.5", "1500m")]
#[case::tenth("0.1", "100m")]
#[case::exponent("1e3", "1k")]
#[case::twelve_tenths("12E-1", "1200m")]
#[case::nano("1n", "1n")]
#[case::micro("1500u", "1500u")]
#[case::binary_input_is_shown_decimal("1.5Gi", "1610612736")]
#[case::negative("-2k", "-2k")]
#[case::ten_exa("10E", "10E")]
#[case::just_above_exa("1.0000000000000000001E", "1000000000000000000100m")]
#[case::integer_above_int64("10.000000000000000001E", "10000000000000000001")]
#[case::nano_precision("1.000000001", "1000000001n")]
#[case::sub_nano_rounded_up_then_shown("1.0000000001", "1000000001n")]
#[case::beyond_exa_has_no_suffix_like_go("1000E", "1")]
fn canonical_string_matches_go_decimal_si(#[case] text: &str, #[case] expected: &str) {
    assert_eq!(amount(text).to_canonical_string(), expected);
    assert_eq!(amount(text).to_string(), expected);
    assert_eq!(amount(text).to_quantity(), Quantity(expected.to_owned()));
}

fn requests(pairs: &[(&str, i64)]) -> Requests {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), *value))
        .collect()
}

#[test]
fn add_requests_sums_per_resource_and_saturates() {
    let mut total = requests(&[("cpu", 1000), ("memory", i64::MAX - 1)]);
    add_requests(
        &mut total,
        &requests(&[("cpu", 500), ("memory", 5), ("pods", 1)]),
    );
    assert_eq!(
        total,
        requests(&[("cpu", 1500), ("memory", i64::MAX), ("pods", 1)])
    );
}

#[test]
fn scale_requests_multiplies_and_saturates() {
    let per_pod = requests(&[("cpu", 4_300_000_000), ("memory", 1024), ("neg", -1)]);
    assert_eq!(
        scale_requests(&per_pod, 2_147_483_647),
        requests(&[
            ("cpu", i64::MAX),
            ("memory", 1024 * 2_147_483_647),
            ("neg", -2_147_483_647)
        ])
    );
    assert_eq!(
        scale_requests(&requests(&[("x", i64::MIN)]), -1),
        requests(&[("x", i64::MAX)])
    );
}

#[test]
fn to_quantities_formats_each_resource_its_own_way() {
    let formatted = to_quantities(&requests(&[
        ("cpu", 1000),
        ("memory", 100_000_000_000),
        ("example.com/accelerator-memory", 20_000_000_000),
    ]));
    let strings: Vec<(&str, &str)> = formatted
        .iter()
        .map(|(k, v)| (k.as_str(), v.0.as_str()))
        .collect();
    assert_eq!(
        strings,
        [
            ("cpu", "1"),
            ("example.com/accelerator-memory", "20G"),
            ("memory", "97656250Ki")
        ]
    );
}
