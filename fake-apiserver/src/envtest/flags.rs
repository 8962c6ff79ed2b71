//! Command-line flags as Go's pflag reads them, for the stand-ins: `--name=value`,
//! `--name value` (unless the flag is a boolean), and a bare `--name` for a boolean.

use std::collections::BTreeMap;

/// A flag the stand-in cannot read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FlagError {
    #[error("unknown flag: --{0}")]
    Unknown(String),
    #[error("flag needs an argument: --{0}")]
    Missing(String),
    #[error("bad flag syntax: {0}")]
    Syntax(String),
    #[error("invalid argument {value:?} for --{name}: {reason}")]
    Invalid {
        name: String,
        value: String,
        reason: String,
    },
}

/// What a program knows: each flag it takes, and whether it is a boolean.
pub struct Known<'a> {
    pub valued: &'a [&'a str],
    pub booleans: &'a [&'a str],
}

/// Parsed flags: each name with the values it was given, in order (a repeated flag keeps all).
#[derive(Debug, Default)]
pub struct Flags {
    values: BTreeMap<String, Vec<String>>,
    /// Arguments after the flags (kube-apiserver and etcd take none).
    pub positional: Vec<String>,
}

impl Flags {
    pub fn parse(args: &[String], known: &Known<'_>) -> Result<Self, FlagError> {
        let mut flags = Flags::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if arg == "--" {
                flags.positional.extend(args.by_ref().cloned());
                break;
            }
            let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                flags.positional.push(arg.clone());
                continue;
            };
            let (name, inline) = match body.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (body, None),
            };
            if name.is_empty() || name.starts_with('-') {
                return Err(FlagError::Syntax(arg.clone()));
            }
            let value = if known.booleans.contains(&name) {
                let value = inline.unwrap_or_else(|| "true".into());
                parse_bool(name, &value)?;
                value
            } else if known.valued.contains(&name) {
                match inline {
                    Some(v) => v,
                    None => args
                        .next()
                        .cloned()
                        .ok_or_else(|| FlagError::Missing(name.into()))?,
                }
            } else {
                return Err(FlagError::Unknown(name.into()));
            };
            flags
                .values
                .entry(name.to_string())
                .or_default()
                .push(value);
        }
        Ok(flags)
    }

    /// The last value given for `name`, as pflag keeps it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name)?.last().map(String::as_str)
    }

    /// A boolean's value, or `default` when it was not given.
    pub fn boolean(&self, name: &str, default: bool) -> bool {
        self.get(name)
            .map_or(default, |v| parse_bool(name, v).unwrap_or(default))
    }

    /// A comma-separated list, every value given joined (as pflag's string slices read them).
    pub fn list(&self, name: &str) -> Vec<String> {
        self.values
            .get(name)
            .into_iter()
            .flatten()
            .flat_map(|v| v.split(','))
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    /// The flags given, as `--name=value`, whose names are not in `acted_on`.
    pub fn not_acted_on(&self, acted_on: &[&str]) -> Vec<String> {
        self.values
            .iter()
            .filter(|(name, _)| !acted_on.contains(&name.as_str()))
            .flat_map(|(name, values)| values.iter().map(move |v| format!("--{name}={v}")))
            .collect()
    }
}

/// Go's strconv.ParseBool, which pflag uses.
fn parse_bool(name: &str, value: &str) -> Result<bool, FlagError> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(FlagError::Invalid {
            name: name.into(),
            value: value.into(),
            reason: "strconv.ParseBool: parsing: invalid syntax".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: Known<'static> = Known {
        valued: &["secure-port", "cert-dir", "runtime-config"],
        booleans: &["allow-privileged"],
    };

    fn parse(args: &[&str]) -> Result<Flags, FlagError> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        Flags::parse(&args, &KNOWN)
    }

    #[test]
    fn values_come_inline_or_as_the_next_argument() {
        let flags = parse(&[
            "--secure-port=6443",
            "--cert-dir",
            "/certs",
            "-allow-privileged",
        ])
        .unwrap();
        assert_eq!(flags.get("secure-port"), Some("6443"));
        assert_eq!(flags.get("cert-dir"), Some("/certs"));
        assert!(flags.boolean("allow-privileged", false));
    }

    #[test]
    fn the_last_value_wins_and_lists_join_every_value() {
        let flags = parse(&["--runtime-config=a=true,b=false", "--runtime-config=c"]).unwrap();
        assert_eq!(flags.get("runtime-config"), Some("c"));
        assert_eq!(flags.list("runtime-config"), ["a=true", "b=false", "c"]);
    }

    #[test]
    fn bad_flags_are_named_as_pflag_names_them() {
        let err = |args: &[&str]| parse(args).unwrap_err().to_string();
        assert_eq!(err(&["--insecure-port=0"]), "unknown flag: --insecure-port");
        assert_eq!(
            err(&["--secure-port"]),
            "flag needs an argument: --secure-port"
        );
        assert_eq!(err(&["---x"]), "bad flag syntax: ---x");
        assert!(
            err(&["--allow-privileged=maybe"])
                .starts_with("invalid argument \"maybe\" for --allow-privileged")
        );
    }

    #[test]
    fn flags_not_acted_on_are_listed_as_given() {
        let flags = parse(&[
            "--secure-port=1",
            "--runtime-config=x",
            "--allow-privileged",
        ])
        .unwrap();
        assert_eq!(
            flags.not_acted_on(&["secure-port"]),
            ["--allow-privileged=true", "--runtime-config=x"]
        );
    }
}
