//! Lists and Tables written as JSON bytes, straight from what the feeds keep serialized
//! (each object's JSON, its `metadata`, a row's cells): the head of a list answer and the
//! end of a Table row, shared by the pods' Table and every other kind's.

/// What each row's `object` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

/// The Table a client asked for: the `meta.k8s.io` version it named first and what each
/// row's `object` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub api_version: &'static str,
    pub include: Include,
}

/// Writes the start of a list or Table answer, up to its `metadata`'s end:
/// `{"kind":K,"apiVersion":V,"metadata":{"resourceVersion":..}` (with `continue` and
/// `remainingItemCount` when more follow). The caller writes the rest and the last `}`.
pub fn list_head(
    out: &mut Vec<u8>,
    kind: &str,
    api_version: &str,
    version: &str,
    next: Option<(&str, usize)>,
) {
    out.extend_from_slice(br#"{"kind":"#);
    push_str(out, kind);
    out.extend_from_slice(br#","apiVersion":"#);
    push_str(out, api_version);
    out.extend_from_slice(br#","metadata":{"resourceVersion":"#);
    push_str(out, version);
    if let Some((token, remaining)) = next {
        out.extend_from_slice(br#","continue":"#);
        push_str(out, token);
        out.extend_from_slice(br#","remainingItemCount":"#);
        out.extend_from_slice(remaining.to_string().as_bytes());
    }
    out.push(b'}');
}

/// Writes the rest of a Table row after its cells: its `object` as `include` asks (the
/// object's `metadata` as already written, or the whole object as `object` writes it),
/// and the row's end.
pub fn row_end(
    out: &mut Vec<u8>,
    include: Include,
    metadata: &[u8],
    object: impl FnOnce(&mut Vec<u8>),
) {
    match include {
        Include::None => {}
        Include::Metadata => {
            out.extend_from_slice(
                br#","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#,
            );
            out.extend_from_slice(metadata);
            out.push(b'}');
        }
        Include::Object => {
            out.extend_from_slice(br#","object":"#);
            object(out);
        }
    }
    out.push(b'}');
}

pub fn push_str(out: &mut Vec<u8>, s: &str) {
    // Writing a `&str` to a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

pub fn push_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // The values written here (columns, cells) are plain strings, numbers and structs of
    // them: serializing them to a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}
