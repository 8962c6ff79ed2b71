//! Exact Kubernetes quantities and Kueue's scheduler units.
//!
//! [`Amount`] holds a quantity as an `i128` count of nano-units, the finest grain Kubernetes keeps
//! (it rounds anything finer up when parsing), so sums, comparisons and products of quantities are
//! exact without floating point. [`to_units`] turns an amount into the `int64` Kueue's scheduler works
//! in (milli-units for `cpu`, whole units otherwise), and [`format_units`] turns such a number back
//! into the string Kueue shows in status fields and messages.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Nano-units in one unit.
const NANOS_PER_UNIT: i128 = 1_000_000_000;
/// Nano-units in one milli-unit.
const NANOS_PER_MILLI: i128 = 1_000_000;
/// The largest magnitude an [`Amount`] holds (about 1.7e29 units); beyond it values saturate.
/// Symmetric so negation never overflows.
const MAX_NANOS: i128 = i128::MAX;
/// Kubernetes caps binary-suffixed quantities (`Ki` … `Ei`) at 2^63-1 in magnitude.
const BINARY_CAP_NANOS: i128 = i64::MAX as i128 * NANOS_PER_UNIT;
/// The resource Kueue counts in milli-units.
const CPU: &str = "cpu";

/// Per-resource requests in Kueue's scheduler units (milli-CPU, whole units for everything else).
pub type Requests = BTreeMap<String, i64>;

/// An exact decimal quantity, in nano-units.
///
/// Ordering and equality are numeric: `1k`, `1000` and `1e3` are the same amount.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount {
    nanos: i128,
}

/// Why a quantity string is not a Kubernetes quantity; the reasons are worded as apimachinery's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantityErrorKind {
    /// The text is not a number followed by a suffix.
    Format,
    /// The number part cannot be read.
    Numeric,
    /// The suffix is not one Kubernetes knows.
    Suffix,
}

impl fmt::Display for QuantityErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuantityErrorKind::Format => {
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityErrorKind::Numeric => "unable to parse numeric part of quantity",
            QuantityErrorKind::Suffix => "unable to parse quantity's suffix",
        })
    }
}

/// A string that is not a Kubernetes quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {text:?}: {kind}")]
pub struct QuantityError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub kind: QuantityErrorKind,
}

/// A quantity that could not be read, with where it was found (a field path such as
/// `containers[0].resources.requests[cpu]`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {source}")]
pub struct QuantityFieldError {
    /// Where the quantity is.
    pub field: String,
    /// Why it could not be read.
    #[source]
    pub source: QuantityError,
}

impl QuantityFieldError {
    /// Attaches a field path to a parse error.
    pub fn new(field: impl Into<String>, source: QuantityError) -> Self {
        QuantityFieldError {
            field: field.into(),
            source,
        }
    }
}

impl Amount {
    /// Zero.
    pub const ZERO: Amount = Amount { nanos: 0 };

    /// An amount of `nanos` nano-units, saturating at the representable range.
    pub const fn from_nanos(nanos: i128) -> Amount {
        Amount {
            nanos: if nanos < -MAX_NANOS {
                -MAX_NANOS
            } else {
                nanos
            },
        }
    }

    /// The amount in nano-units.
    pub const fn nanos(&self) -> i128 {
        self.nanos
    }

    /// An amount of `value` whole units.
    pub const fn from_int(value: i64) -> Amount {
        // |i64| * 1e9 is far inside i128.
        Amount {
            nanos: value as i128 * NANOS_PER_UNIT,
        }
    }

    /// An amount of `value` milli-units.
    pub const fn from_milli(value: i64) -> Amount {
        Amount {
            nanos: value as i128 * NANOS_PER_MILLI,
        }
    }

    /// Parses a Kubernetes quantity (`1.5`, `100m`, `2Gi`, `12e-1`, `-3k`, …) exactly as apimachinery's
    /// `ParseQuantity` does: the same accepted forms, non-zero values finer than a nano-unit rounded up
    /// in magnitude, binary-suffixed values capped at 2^63-1. Surrounding whitespace is rejected, as
    /// there; [`Amount::from_quantity`] trims it the way JSON decoding does.
    pub fn parse(text: &str) -> Result<Amount, QuantityError> {
        let fail = |kind| QuantityError {
            text: text.to_owned(),
            kind,
        };
        if text.is_empty() {
            return Err(fail(QuantityErrorKind::Format));
        }
        let scanned = scan(text).ok_or_else(|| fail(QuantityErrorKind::Format))?;
        let suffix =
            interpret_suffix(scanned.suffix).ok_or_else(|| fail(QuantityErrorKind::Suffix))?;
        // Kubernetes reads the number with a general decimal parser only on its slow path (very
        // precise, very small or binary-large values); that parser needs a digit, so a bare sign or
        // point is zero on the fast path and an error on the slow one.
        let digits: Vec<u8> = scanned
            .num
            .bytes()
            .chain(scanned.denom.bytes())
            .map(|b| b - b'0')
            .collect();
        let denom_len = i32::try_from(scanned.denom.len()).unwrap_or(i32::MAX);
        let magnitude = match suffix {
            Suffix::Decimal(exponent) => {
                // Go computes the scale in int32 and lets it wrap, differently on its two paths;
                // the paths agree whenever nothing wraps.
                let fast_scale = exponent.wrapping_sub(denom_len);
                let precise_enough = scanned.num.len().max(1) + scanned.denom.len() <= 18;
                let scale = if precise_enough && fast_scale >= -9 {
                    i64::from(fast_scale)
                } else if scanned.has_digit {
                    -i64::from(denom_len.wrapping_add(exponent.wrapping_neg()))
                } else {
                    return Err(fail(QuantityErrorKind::Numeric));
                };
                digits_to_nanos(&digits, 0, scale + 9)
            }
            Suffix::Binary(shift) => {
                // Go's fast path covers digit-less binary text only up to `Ti`.
                if !scanned.has_digit && shift >= 50 {
                    return Err(fail(QuantityErrorKind::Numeric));
                }
                digits_to_nanos(&digits, shift, 9 - i64::from(denom_len)).min(BINARY_CAP_NANOS)
            }
        };
        Ok(Amount {
            nanos: if scanned.negative {
                -magnitude
            } else {
                magnitude
            },
        })
    }

    /// Reads a [`Quantity`] as the API server decodes one: surrounding whitespace is ignored.
    pub fn from_quantity(quantity: &Quantity) -> Result<Amount, QuantityError> {
        Amount::parse(quantity.0.trim())
    }

    /// The sum, or `None` past the representable range (about ±1.7e29 units).
    pub fn checked_add(&self, other: &Amount) -> Option<Amount> {
        self.nanos
            .checked_add(other.nanos)
            .filter(|n| *n >= -MAX_NANOS)
            .map(|nanos| Amount { nanos })
    }

    /// The sum, saturating at the representable range.
    pub fn saturating_add(&self, other: &Amount) -> Amount {
        Amount::from_nanos(self.nanos.saturating_add(other.nanos))
    }

    /// The difference, saturating at the representable range.
    pub fn saturating_sub(&self, other: &Amount) -> Amount {
        Amount::from_nanos(self.nanos.saturating_sub(other.nanos))
    }

    /// The exact product of two decimals (`100m` × `3000` = `300`), saturating at the representable
    /// range. A product finer than a nano-unit is rounded towards +∞, which keeps the later
    /// round-up to scheduler units exact (see [`to_units`]).
    pub fn saturating_mul(&self, other: &Amount) -> Amount {
        let negative = (self.nanos < 0) != (other.nanos < 0);
        let (whole, remainder) =
            match mul_div_nano(self.nanos.unsigned_abs(), other.nanos.unsigned_abs()) {
                Some(parts) => parts,
                None => return Amount::from_nanos(if negative { -MAX_NANOS } else { MAX_NANOS }),
            };
        let magnitude = i128::try_from(whole).unwrap_or(MAX_NANOS);
        if negative {
            // Rounding towards +∞ drops the sub-nano part of a negative product.
            Amount::from_nanos(-magnitude)
        } else if remainder > 0 {
            Amount::from_nanos(magnitude.saturating_add(1))
        } else {
            Amount::from_nanos(magnitude)
        }
    }

    /// The amount times an integer, saturating at the representable range.
    pub fn saturating_mul_int(&self, factor: i64) -> Amount {
        Amount::from_nanos(self.nanos.saturating_mul(i128::from(factor)))
    }

    /// The amount, or zero if it is negative.
    pub fn clamp_non_negative(&self) -> Amount {
        Amount {
            nanos: self.nanos.max(0),
        }
    }

    /// Whether the amount is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether the amount is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// The amount as apimachinery's canonical `String()` of a DecimalSI quantity (`20G`, `300`,
    /// `1500m`, `0`).
    ///
    /// Like Go, a value needing an exponent above 18 (more than `999E`) is printed without a suffix,
    /// since apimachinery has none for it.
    pub fn to_canonical_string(&self) -> String {
        decimal_si(self.nanos, -9)
    }

    /// The amount as a DecimalSI [`Quantity`] in canonical form.
    pub fn to_quantity(&self) -> Quantity {
        Quantity(self.to_canonical_string())
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_canonical_string())
    }
}

impl FromStr for Amount {
    type Err = QuantityError;

    fn from_str(text: &str) -> Result<Amount, QuantityError> {
        Amount::parse(text)
    }
}

/// Whether Kueue shows the resource with binary suffixes (`Ki`, `Mi`, …): memory, ephemeral
/// storage and huge pages.
pub fn is_binary_resource(resource: &str) -> bool {
    resource == "memory" || resource == "ephemeral-storage" || resource.starts_with("hugepages-")
}

/// The amount in Kueue's scheduler units: milli-units for `cpu`, whole units otherwise, rounded up
/// away from zero like Go's `Quantity.MilliValue()` / `Value()`, saturating at `i64::MAX` /
/// `i64::MIN` like Kueue's `ResourceValue`.
pub fn to_units(resource: &str, amount: &Amount) -> i64 {
    let per_unit = if resource == CPU {
        NANOS_PER_MILLI
    } else {
        NANOS_PER_UNIT
    };
    let whole = amount.nanos / per_unit;
    let rounded = match (amount.nanos % per_unit).signum() {
        1 => whole + 1,
        -1 => whole - 1,
        _ => whole,
    };
    i64::try_from(rounded).unwrap_or(if rounded > 0 { i64::MAX } else { i64::MIN })
}

/// The scheduler-unit value formatted as Kueue's `ResourceQuantity(name, value).String()`: `cpu` as a
/// milli-quantity in DecimalSI, memory, ephemeral storage and huge pages in BinarySI, everything else
/// in DecimalSI, each in apimachinery's canonical form (`1500m`, `2`, `97656250Ki`, `20G`, `1k`).
pub fn format_units(resource: &str, value: i64) -> String {
    if resource == CPU {
        decimal_si(i128::from(value), -3)
    } else if is_binary_resource(resource) {
        binary_si(value)
    } else {
        decimal_si(i128::from(value), 0)
    }
}

/// [`format_units`] as a [`Quantity`].
pub fn quantity(resource: &str, value: i64) -> Quantity {
    Quantity(format_units(resource, value))
}

/// Each request formatted with [`quantity`], as Kueue's `Requests.ToResourceList` writes
/// `status.resourceRequests`.
pub fn to_quantities(requests: &Requests) -> BTreeMap<String, Quantity> {
    requests
        .iter()
        .map(|(name, value)| (name.clone(), quantity(name, *value)))
        .collect()
}

/// Adds `other` into `total`, saturating per resource.
pub fn add_requests(total: &mut Requests, other: &Requests) {
    for (name, value) in other {
        let slot = total.entry(name.clone()).or_insert(0);
        *slot = slot.saturating_add(*value);
    }
}

/// Every request times `count`, saturating per resource.
pub fn scale_requests(requests: &Requests, count: i64) -> Requests {
    requests
        .iter()
        .map(|(name, value)| (name.clone(), value.saturating_mul(count)))
        .collect()
}

/// The parts of a quantity string, split the way apimachinery's scanner splits it.
struct Scanned<'a> {
    negative: bool,
    /// Whether the number part (sign, digits and point) holds a digit at all.
    has_digit: bool,
    /// Integer digits without leading zeros.
    num: &'a str,
    /// Fraction digits.
    denom: &'a str,
    suffix: &'a str,
}

/// Splits `text` into sign, integer digits, fraction digits and suffix; `None` if the suffix part is
/// not letters from `eEinumkKMGTP`, an optional sign and digits.
fn scan(text: &str) -> Option<Scanned<'_>> {
    let bytes = text.as_bytes();
    let digits_from = |start: usize| {
        bytes[start..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map_or(bytes.len(), |n| start + n)
    };
    let mut pos = 0;
    let mut negative = false;
    match bytes.first() {
        Some(b'-') => {
            negative = true;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    let zeros_end = bytes[pos..]
        .iter()
        .position(|b| *b != b'0')
        .map_or(bytes.len(), |n| pos + n);
    let leading_zeros = zeros_end > pos;
    pos = zeros_end;
    let num_end = digits_from(pos);
    let num = &text[pos..num_end];
    pos = num_end;
    let mut denom = "";
    if bytes.get(pos) == Some(&b'.') {
        let denom_end = digits_from(pos + 1);
        denom = &text[pos + 1..denom_end];
        pos = denom_end;
    }
    let suffix = &text[pos..];
    let letters_end = bytes[pos..]
        .iter()
        .position(|b| !b"eEinumkKMGTP".contains(b))
        .map_or(bytes.len(), |n| pos + n);
    let mut rest = letters_end;
    if matches!(bytes.get(rest), Some(b'-' | b'+')) {
        rest += 1;
    }
    if digits_from(rest) != bytes.len() {
        return None;
    }
    Some(Scanned {
        negative,
        has_digit: leading_zeros || !num.is_empty() || !denom.is_empty(),
        num,
        denom,
        suffix,
    })
}

/// What a suffix multiplies the number by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Suffix {
    /// × 10^n (SI prefixes and `e`/`E` exponents).
    Decimal(i32),
    /// × 2^n (`Ki` … `Ei`).
    Binary(u32),
}

fn interpret_suffix(suffix: &str) -> Option<Suffix> {
    let decimal = match suffix {
        "" => 0,
        "n" => -9,
        "u" => -6,
        "m" => -3,
        "k" => 3,
        "M" => 6,
        "G" => 9,
        "T" => 12,
        "P" => 15,
        "E" => 18,
        "Ki" => return Some(Suffix::Binary(10)),
        "Mi" => return Some(Suffix::Binary(20)),
        "Gi" => return Some(Suffix::Binary(30)),
        "Ti" => return Some(Suffix::Binary(40)),
        "Pi" => return Some(Suffix::Binary(50)),
        "Ei" => return Some(Suffix::Binary(60)),
        _ => {
            let exponent = suffix
                .strip_prefix(['e', 'E'])
                .filter(|rest| !rest.is_empty())?;
            // Go reads an int64 and then truncates it to int32.
            return parse_go_int64(exponent).map(|e| Suffix::Decimal(e as i32));
        }
    };
    Some(Suffix::Decimal(decimal))
}

/// Go's `strconv.ParseInt(s, 10, 64)`: an optional sign and ASCII digits, no overflow.
fn parse_go_int64(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Accumulate negatively so i64::MIN parses.
    digits.bytes().try_fold(0i64, |acc, b| {
        let digit = i64::from(b - b'0');
        acc.checked_mul(10)?
            .checked_add(if negative { -digit } else { digit })
    })
}

/// `digits` (a decimal integer, most significant first) × 2^`shift` × 10^`pow10`, as a magnitude in
/// the caller's unit, rounded up when fractional and saturating at [`MAX_NANOS`].
///
/// Works on the digit string so inputs of any length are exact and cost linear time.
fn digits_to_nanos(digits: &[u8], shift: u32, pow10: i64) -> i128 {
    let mut little_endian: Vec<u8> = digits.iter().rev().copied().collect();
    let mut remaining = shift;
    while remaining > 0 {
        let step = remaining.min(20);
        multiply_digits(&mut little_endian, 1 << step);
        remaining -= step;
    }
    while little_endian.last() == Some(&0) {
        little_endian.pop();
    }
    if little_endian.is_empty() {
        return 0;
    }
    let len = i64::try_from(little_endian.len()).unwrap_or(i64::MAX);
    // i128::MAX has 39 digits: anything longer saturates.
    if len.saturating_add(pow10) > 39 {
        return MAX_NANOS;
    }
    let (fraction_len, zeros) = if pow10 < 0 {
        (usize::try_from(-pow10).unwrap_or(usize::MAX), 0)
    } else {
        (0, u32::try_from(pow10).unwrap_or(u32::MAX))
    };
    let round_up = little_endian.iter().take(fraction_len).any(|d| *d != 0);
    let whole = little_endian
        .iter()
        .skip(fraction_len)
        .rev()
        .try_fold(0i128, |acc, d| {
            acc.checked_mul(10)?.checked_add(i128::from(*d))
        })
        .and_then(|w| w.checked_mul(10i128.checked_pow(zeros)?))
        .and_then(|w| w.checked_add(i128::from(round_up)));
    whole.unwrap_or(MAX_NANOS)
}

/// Multiplies a little-endian decimal digit vector by `factor` in place.
fn multiply_digits(little_endian: &mut Vec<u8>, factor: u64) {
    let mut carry = 0u64;
    for digit in little_endian.iter_mut() {
        let value = u64::from(*digit) * factor + carry;
        *digit = (value % 10) as u8;
        carry = value / 10;
    }
    while carry > 0 {
        little_endian.push((carry % 10) as u8);
        carry /= 10;
    }
}

/// `a × b / 10^9` for two magnitudes in nano-units: the whole nano-units of the product and the
/// sub-nano remainder, or `None` if the whole part does not fit in `u128`.
fn mul_div_nano(a: u128, b: u128) -> Option<(u128, u128)> {
    const N: u128 = NANOS_PER_UNIT as u128;
    let (a_hi, a_lo) = (a / N, a % N);
    let (b_hi, b_lo) = (b / N, b % N);
    // (a_hi·N + a_lo)(b_hi·N + b_lo) / N = a_hi·b_hi·N + a_hi·b_lo + a_lo·b_hi + a_lo·b_lo / N
    let low = a_lo * b_lo; // < 10^18
    a_hi.checked_mul(b_hi)?
        .checked_mul(N)?
        .checked_add(a_hi.checked_mul(b_lo)?)?
        .checked_add(a_lo.checked_mul(b_hi)?)?
        .checked_add(low / N)
        .map(|whole| (whole, low % N))
}

/// apimachinery's canonical DecimalSI form of `mantissa` × 10^`exponent`: trailing zeros move into
/// the exponent, the exponent drops to a multiple of three and becomes an SI suffix.
fn decimal_si(mantissa: i128, exponent: i32) -> String {
    if mantissa == 0 {
        return "0".to_owned();
    }
    let mut magnitude = mantissa.unsigned_abs();
    let mut exponent = exponent;
    while magnitude.is_multiple_of(10) {
        magnitude /= 10;
        exponent += 1;
    }
    let extra = exponent.rem_euclid(3);
    magnitude = magnitude.saturating_mul(10u128.pow(extra.unsigned_abs()));
    exponent -= extra;
    let suffix = match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        // apimachinery has no suffix for other exponents and silently prints none.
        _ => "",
    };
    let sign = if mantissa < 0 { "-" } else { "" };
    format!("{sign}{magnitude}{suffix}")
}

/// apimachinery's canonical BinarySI form of an integer: values strictly between -1024 and 1024 are
/// shown as DecimalSI (`1k`, `512`); others move factors of 1024 into a binary suffix (`97656250Ki`),
/// leaving a plain integer when there is none (`100000000`).
fn binary_si(value: i64) -> String {
    if value > -1024 && value < 1024 {
        return decimal_si(i128::from(value), 0);
    }
    if value == i64::MIN {
        // Go's factor removal negates the value first, which overflows here and removes nothing.
        return value.to_string();
    }
    let mut magnitude = value.unsigned_abs();
    let mut power = 0;
    while power < 6 && magnitude.is_multiple_of(1024) {
        magnitude /= 1024;
        power += 1;
    }
    let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
    let sign = if value < 0 { "-" } else { "" };
    format!("{sign}{magnitude}{suffix}")
}
