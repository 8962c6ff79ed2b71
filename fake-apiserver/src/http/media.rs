//! Which encoding answers a request. kube-apiserver reads the Accept header's media ranges by
//! quality (highest first; of equal ones, a concrete type before a wildcard, else in the order
//! given; `q=0` refuses), and answers with the first one it can serve. Protobuf serves built-in
//! kinds, and the metadata-only views of any kind; a custom resource asked for in protobuf first is
//! answered by the next range, or 406 when there is none.
//!
//! Ranges this server does not know (`text/html`) are skipped; when nothing known is offered it
//! answers JSON, as it always has (kube-apiserver answers 406).

use std::cmp::Reverse;

/// An answer's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    Json,
    Protobuf,
}

/// The known media ranges of an Accept header, in the order they are tried.
#[derive(Debug, Clone)]
pub struct Accept {
    ranges: Vec<Media>,
}

impl Accept {
    pub fn parse(header: &str) -> Accept {
        let mut ranges: Vec<(Reverse<u32>, u8, Media)> = Vec::new();
        for range in header.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let mime = parts.next().unwrap_or("").to_ascii_lowercase();
            let mut quality = 1000;
            for p in parts {
                if let Some(q) = p.strip_prefix("q=") {
                    quality = q
                        .trim()
                        .parse::<f64>()
                        .map_or(0, |q| (q.clamp(0.0, 1.0) * 1000.0) as u32);
                }
            }
            if quality == 0 {
                continue;
            }
            let (wildcard, media) = match mime.as_str() {
                "application/vnd.kubernetes.protobuf" => (0, Media::Protobuf),
                "application/json" | "application/yaml" => (0, Media::Json),
                "application/*" => (1, Media::Json),
                "*/*" => (2, Media::Json),
                _ => continue,
            };
            ranges.push((Reverse(quality), wildcard, media));
        }
        // Stable: of two equal ranges, the first given wins.
        ranges.sort_by_key(|(q, wildcard, _)| (*q, *wildcard));
        Accept {
            ranges: ranges.into_iter().map(|(_, _, m)| m).collect(),
        }
    }

    /// The encoding of an answer, given whether it has a protobuf form; `None`: none acceptable.
    pub fn choose(&self, protobuf_form: bool) -> Option<Media> {
        if self.ranges.is_empty() {
            return Some(Media::Json);
        }
        self.ranges
            .iter()
            .copied()
            .find(|m| *m == Media::Json || protobuf_form)
    }

    /// The encoding of a Status, which always has a protobuf form: the first range's.
    pub fn for_status(&self) -> Media {
        self.ranges.first().copied().unwrap_or(Media::Json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_go_asks_for_protobuf_then_json() {
        let a = Accept::parse("application/vnd.kubernetes.protobuf, */*");
        assert_eq!(a.choose(true), Some(Media::Protobuf));
        // A custom resource has no protobuf form: the next range answers.
        assert_eq!(a.choose(false), Some(Media::Json));
        assert_eq!(a.for_status(), Media::Protobuf);
    }

    #[test]
    fn protobuf_alone_for_a_custom_resource_is_not_acceptable() {
        let a = Accept::parse("application/vnd.kubernetes.protobuf");
        assert_eq!(a.choose(false), None);
        assert_eq!(a.for_status(), Media::Protobuf);
    }

    #[test]
    fn quality_orders_the_ranges_and_zero_refuses() {
        let a = Accept::parse("application/json;q=0.5, application/vnd.kubernetes.protobuf");
        assert_eq!(a.choose(true), Some(Media::Protobuf));
        let a = Accept::parse("application/vnd.kubernetes.protobuf;q=0.2, application/json");
        assert_eq!(a.choose(true), Some(Media::Json));
        let a = Accept::parse("application/vnd.kubernetes.protobuf;q=0, application/json");
        assert_eq!(a.for_status(), Media::Json);
        // A wildcard comes after a concrete type of the same quality.
        let a = Accept::parse("*/*, application/vnd.kubernetes.protobuf");
        assert_eq!(a.choose(true), Some(Media::Protobuf));
    }

    #[test]
    fn no_known_range_answers_json() {
        for header in ["", "text/html", "application/cbor"] {
            let a = Accept::parse(header);
            assert_eq!(a.choose(true), Some(Media::Json), "{header}");
            assert_eq!(a.for_status(), Media::Json, "{header}");
        }
    }
}
