//! The kube-api front's `resourceVersion`: a position in every leaf's feed, opaque to
//! clients, which a list hands out and a watch resumes from.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A position in every leaf's feed, as a list's or an event's `resourceVersion`: per leaf,
/// the feed's epoch and the position of the last change the holder saw there.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Token(BTreeMap<String, (u64, u64)>);

impl Token {
    pub fn set(&mut self, leaf: &str, epoch: u64, seq: u64) {
        self.0.insert(leaf.to_string(), (epoch, seq));
    }

    pub fn get(&self, leaf: &str) -> Option<(u64, u64)> {
        self.0.get(leaf).copied()
    }

    /// The opaque text: `leaf=epoch.seq` pairs, base64url so clients treat it as opaque.
    pub fn encode(&self) -> String {
        let text: Vec<String> = self
            .0
            .iter()
            .map(|(l, (e, s))| format!("{l}={e}.{s}"))
            .collect();
        URL_SAFE_NO_PAD.encode(text.join(";"))
    }

    pub fn parse(token: &str) -> Option<Token> {
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(token).ok()?).ok()?;
        let mut out = Token::default();
        for pair in text.split(';').filter(|p| !p.is_empty()) {
            let (leaf, pos) = pair.rsplit_once('=')?;
            let (epoch, seq) = pos.split_once('.')?;
            out.0
                .insert(leaf.to_string(), (epoch.parse().ok()?, seq.parse().ok()?));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_stay_opaque() {
        let mut t = Token::default();
        t.set("leaf-a", 1_700_000_000_000_000_000, 17);
        t.set("leaf-b", 5, 0);
        let text = t.encode();
        assert!(!text.contains("leaf"), "{text}");
        assert_eq!(Token::parse(&text), Some(t));
        assert_eq!(Token::parse("not base64!"), None);
        assert_eq!(Token::parse(&URL_SAFE_NO_PAD.encode("leaf-a=17")), None);
    }
}
