//! Reading a kube-api request's query string.

/// The first value of `key` in a query string, decoded.
pub fn query_value(query: Option<&str>, key: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}
