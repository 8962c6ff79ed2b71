//! A linear pre-read of YAML bodies for how deep their flow collections (`[...]`, `{...}`) nest.
//!
//! libyaml, under serde_yaml, takes time growing with the square of flow nesting: a body of
//! 60,000 `[` kept a core busy for seconds before serde_yaml's own depth limit refused it. This
//! scan finds such bodies in one pass first. It follows YAML's lexical structure only as far as
//! it must to tell brackets that open collections from brackets inside text: quoted scalars,
//! comments, block scalars (`|`, `>`), and plain scalars, where a bracket is just a character.

use serde_json::Value;

/// The deepest nesting this server reads: serde_json's and serde_yaml's recursion limit.
/// kube-apiserver's decoders go to 10,000 (see ARCHITECTURE.md's differences).
pub const MAX_DEPTH: usize = 128;

/// A YAML body read as JSON, refused first when its flow collections nest deeper than
/// [`MAX_DEPTH`]. `describe` words serde_yaml's errors the way the caller's endpoint does.
pub fn read(body: &[u8], describe: impl Fn(&serde_yaml::Error) -> String) -> Result<Value, String> {
    if let Some(line) = too_deep(body, MAX_DEPTH) {
        return Err(format!(
            "yaml: line {line}: exceeded max depth of {MAX_DEPTH}"
        ));
    }
    serde_yaml::from_slice(body).map_err(|e| describe(&e))
}

/// The line (from 1) on which flow collections first nest deeper than `limit`, if they do.
pub fn too_deep(text: &[u8], limit: usize) -> Option<usize> {
    let mut scan = Scan {
        text,
        at: 0,
        line: 1,
    };
    let mut depth = 0usize;
    // Lines indented more than this are a block scalar's text.
    let mut block_scalar: Option<usize> = None;
    let mut indent = 0;
    let mut line_start = true;
    // Whether the next character starts a node (so a bracket there opens a collection).
    let mut node_start = true;
    while let Some(b) = scan.peek() {
        if b == b'\n' {
            scan.bump();
            (line_start, indent) = (true, 0);
            node_start = true;
            continue;
        }
        if line_start {
            if b == b' ' {
                indent += 1;
                scan.bump();
                continue;
            }
            line_start = false;
            if depth == 0 {
                if block_scalar.is_some_and(|parent| indent > parent) {
                    scan.skip_line();
                    continue;
                }
                block_scalar = None;
            }
        }
        let after_space = scan.at == 0 || matches!(text[scan.at - 1], b' ' | b'\t' | b'\n');
        let next_is_blank = matches!(scan.peek_at(1), None | Some(b' ' | b'\t' | b'\r' | b'\n'));
        match b {
            b'#' if after_space => scan.skip_line(),
            b'"' | b'\'' if node_start => {
                scan.skip_quoted(b);
                node_start = false;
            }
            // An anchor or tag before a node: the node still starts after it.
            b'&' | b'!' if node_start => scan.skip_token(),
            b'[' | b'{' if node_start || depth > 0 => {
                depth += 1;
                if depth > limit {
                    return Some(scan.line);
                }
                scan.bump();
                node_start = true;
            }
            b']' | b'}' if depth > 0 => {
                depth -= 1;
                scan.bump();
                node_start = false;
            }
            b'|' | b'>' if node_start && depth == 0 => {
                block_scalar = Some(indent);
                scan.skip_line();
            }
            b' ' | b'\t' => scan.bump(),
            b',' if depth > 0 => {
                scan.bump();
                node_start = true;
            }
            // Flow mappings may write `"key":value`; block indicators need a blank after them.
            b':' if depth > 0 || next_is_blank => {
                scan.bump();
                node_start = true;
            }
            b'-' | b'?' if node_start && next_is_blank => scan.bump(),
            _ => {
                scan.bump();
                node_start = false;
            }
        }
    }
    None
}

struct Scan<'a> {
    text: &'a [u8],
    at: usize,
    line: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.text.get(self.at + ahead).copied()
    }

    fn bump(&mut self) {
        if self.peek() == Some(b'\n') {
            self.line += 1;
        }
        self.at += 1;
    }

    /// To the end of the line, leaving the newline.
    fn skip_line(&mut self) {
        while self.peek().is_some_and(|b| b != b'\n') {
            self.at += 1;
        }
    }

    /// To the next blank or flow indicator.
    fn skip_token(&mut self) {
        while self.peek().is_some_and(|b| {
            !matches!(
                b,
                b' ' | b'\t' | b'\r' | b'\n' | b',' | b'[' | b']' | b'{' | b'}'
            )
        }) {
            self.at += 1;
        }
    }

    /// Past a quoted scalar: `\` escapes in double quotes, `''` in single quotes.
    fn skip_quoted(&mut self, quote: u8) {
        self.bump();
        while let Some(b) = self.peek() {
            self.bump();
            if quote == b'"' && b == b'\\' {
                self.bump();
            } else if b == quote {
                if quote == b'\'' && self.peek() == Some(b'\'') {
                    self.bump();
                } else {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn flow_nesting_beyond_the_limit_is_found_on_its_line() {
        let body = format!(
            "kind: ConfigMap\nmetadata:\n  name: a\nx: {}\n",
            nested(129)
        );
        assert_eq!(too_deep(body.as_bytes(), 128), Some(4));
        let body = format!("x: {}\n", nested(128));
        assert_eq!(too_deep(body.as_bytes(), 128), None);
        // Across lines, in mappings, after anchors and tags, and in a sequence.
        let body = "a: &x !!seq [\n  {b: [\n    [c]]}]\n- - [[[d]]]\n";
        assert_eq!(too_deep(body.as_bytes(), 3), Some(3));
        assert_eq!(too_deep(body.as_bytes(), 4), None);
        assert_eq!(too_deep(b"{\"a\":[[1]]}", 2), Some(1));
    }

    #[test]
    fn brackets_inside_text_do_not_count() {
        let many = "[".repeat(500);
        for body in [
            format!("a: \"{many}\"\n"),
            format!("a: '{many} it''s'\n"),
            format!("a: b{many}\n"),
            format!("a: x # {many}\n"),
            format!("a: |\n  {many}\n\n  {many}\nb: >-\n    {many}\n"),
            format!("- x {many}\n"),
            format!("[\"{many}\", '{many}']\n"),
        ] {
            assert_eq!(too_deep(body.as_bytes(), 128), None, "{body}");
        }
        // The block scalar ends where the indentation does.
        let body = format!("a: |\n  {many}\nb: {}\n", nested(200));
        assert_eq!(too_deep(body.as_bytes(), 128), Some(3));
    }

    #[test]
    fn a_million_brackets_are_read_in_one_pass() {
        let body = "[".repeat(1_000_000);
        assert_eq!(too_deep(body.as_bytes(), MAX_DEPTH), Some(1));
    }
}
