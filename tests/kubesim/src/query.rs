//! The request query string: percent-decoding and typed lookups. Owns parsing only.

/// Decoded `key=value` pairs in order (repeated keys kept).
#[derive(Debug, Clone, Default)]
pub struct Query(pub Vec<(String, String)>);

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or(())
                {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Query {
    pub fn parse(q: Option<&str>) -> Query {
        Query(
            q.unwrap_or("")
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(p), String::new()),
                })
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// A boolean parameter as Go's `strconv.ParseBool` reads it; absent is false.
    pub fn flag(&self, key: &str) -> Result<bool, String> {
        match self.get(key) {
            None => Ok(false),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(true),
            Some("" | "0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(false),
            Some(v) => Err(format!("{key}: invalid boolean value {v:?}")),
        }
    }

    /// An integer parameter; absent is None.
    pub fn int(&self, key: &str) -> Result<Option<i64>, String> {
        self.get(key)
            .filter(|v| !v.is_empty())
            .map(|v| {
                v.parse()
                    .map_err(|_| format!("{key}: invalid integer {v:?}"))
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb%2Ctier+in+(a)&command=ls&command=-l&x",
        ));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert_eq!(q.all("command"), vec!["ls", "-l"]);
        assert_eq!(q.get("x"), Some(""));
        assert_eq!(Query::parse(Some("a=%zz%4")).get("a"), Some("%zz%4"));
    }
}
