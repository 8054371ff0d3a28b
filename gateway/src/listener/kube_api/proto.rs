//! Reading the protobuf request bodies client-go sends: kube-apiserver's envelope (the
//! magic `k8s\0`, then a `runtime.Unknown{typeMeta, raw, contentEncoding, contentType}`)
//! and, inside `raw`, the fields of one message by number.
//!
//! client-go >= 1.32 posts the typed clients' bodies (the review APIs `kubectl auth` uses)
//! as `application/vnd.kubernetes.protobuf` and does not retry in JSON after a 415, so the
//! front must read them. The reviews carry a handful of string fields, so this is a small
//! wire-format reader (varints, length-delimited fields; other wire types skipped) rather
//! than generated code: neither `k8s-openapi` nor `kube` speak protobuf, and a generated
//! crate of every Kubernetes message would be thousands of types for five.

/// The four bytes before every Kubernetes protobuf object.
const MAGIC: &[u8] = b"k8s\0";

/// Why a body is not the protobuf it claims to be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    #[error("provided object is not a Kubernetes protobuf object (no `k8s\\0` prefix)")]
    NoMagic,
    #[error("protobuf: truncated {0}")]
    Truncated(&'static str),
    #[error("protobuf: field {0} is not valid UTF-8")]
    NotUtf8(u32),
    #[error("protobuf: wire type {wire} of field {field} is not supported")]
    WireType { field: u32, wire: u8 },
    #[error("protobuf: content encoding {0:?} is not supported")]
    Encoding(String),
}

/// One field value: bytes (strings, nested messages), or a number the reviews never read.
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Bytes(&'a [u8]),
    Number,
}

/// A message's fields in wire order (a repeated field appears once per element).
#[derive(Debug, Default)]
pub struct Message<'a> {
    fields: Vec<(u32, Value<'a>)>,
}

/// The object inside the envelope: its `apiVersion`, `kind` and encoded bytes.
#[derive(Debug)]
pub struct Unknown<'a> {
    pub api_version: String,
    pub kind: String,
    pub raw: &'a [u8],
}

/// Opens the envelope of a Kubernetes protobuf body.
pub fn unwrap(body: &[u8]) -> Result<Unknown<'_>, ProtoError> {
    let inner = body.strip_prefix(MAGIC).ok_or(ProtoError::NoMagic)?;
    let unknown = Message::parse(inner)?;
    let type_meta = unknown.message(1)?.unwrap_or_default();
    let encoding = unknown.string(3)?;
    if !encoding.is_empty() {
        return Err(ProtoError::Encoding(encoding));
    }
    Ok(Unknown {
        api_version: type_meta.string(1)?,
        kind: type_meta.string(2)?,
        raw: unknown.bytes(2).unwrap_or_default(),
    })
}

impl<'a> Message<'a> {
    /// Splits `buf` into its fields; nested messages stay bytes until asked for.
    pub fn parse(mut buf: &'a [u8]) -> Result<Message<'a>, ProtoError> {
        let mut fields = Vec::new();
        while !buf.is_empty() {
            let key = varint(&mut buf)?;
            let field = u32::try_from(key >> 3).map_err(|_| ProtoError::Truncated("key"))?;
            let wire = (key & 7) as u8;
            let value = match wire {
                0 => {
                    varint(&mut buf)?;
                    Value::Number
                }
                1 => {
                    buf = buf.get(8..).ok_or(ProtoError::Truncated("fixed64"))?;
                    Value::Number
                }
                2 => {
                    let len = usize::try_from(varint(&mut buf)?)
                        .map_err(|_| ProtoError::Truncated("length"))?;
                    if buf.len() < len {
                        return Err(ProtoError::Truncated("length-delimited field"));
                    }
                    let (bytes, rest) = buf.split_at(len);
                    buf = rest;
                    Value::Bytes(bytes)
                }
                5 => {
                    buf = buf.get(4..).ok_or(ProtoError::Truncated("fixed32"))?;
                    Value::Number
                }
                _ => return Err(ProtoError::WireType { field, wire }),
            };
            fields.push((field, value));
        }
        Ok(Message { fields })
    }

    /// The last bytes value of `field` (protobuf: the last of a singular field wins).
    fn bytes(&self, field: u32) -> Option<&'a [u8]> {
        self.fields.iter().rev().find_map(|(n, v)| match v {
            Value::Bytes(b) if *n == field => Some(*b),
            _ => None,
        })
    }

    /// A string field; `""` when absent, as proto2's default.
    pub fn string(&self, field: u32) -> Result<String, ProtoError> {
        self.bytes(field).map_or(Ok(String::new()), |b| {
            std::str::from_utf8(b)
                .map(str::to_string)
                .map_err(|_| ProtoError::NotUtf8(field))
        })
    }

    /// A nested message, `None` when absent.
    pub fn message(&self, field: u32) -> Result<Option<Message<'a>>, ProtoError> {
        self.bytes(field).map(Message::parse).transpose()
    }
}

fn varint(buf: &mut &[u8]) -> Result<u64, ProtoError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = buf.split_first().ok_or(ProtoError::Truncated("varint"))?;
        *buf = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(ProtoError::Truncated("varint"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Encodes a length-delimited field (the tests' writer, for bodies as client-go sends).
    pub(crate) fn field(number: u32, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, u64::from(number) << 3 | 2);
        put_varint(&mut out, bytes.len() as u64);
        out.extend_from_slice(bytes);
        out
    }

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A whole body: magic, `Unknown{typeMeta{apiVersion, kind}, raw}`.
    pub(crate) fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
        let mut body = MAGIC.to_vec();
        body.extend(field(1, &type_meta));
        body.extend(field(2, raw));
        body.extend(field(4, b"application/vnd.kubernetes.protobuf"));
        body
    }

    #[test]
    fn the_envelope_and_nested_fields_read_back() {
        let attrs = [field(1, b"apps"), field(2, b"get"), field(5, b"pods")].concat();
        let spec = field(1, &attrs);
        let raw = [field(1, b""), field(2, &spec)].concat();
        let body = envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", &raw);
        let unknown = unwrap(&body).unwrap();
        assert_eq!(unknown.api_version, "authorization.k8s.io/v1");
        assert_eq!(unknown.kind, "SelfSubjectAccessReview");
        let review = Message::parse(unknown.raw).unwrap();
        let attrs = review
            .message(2)
            .unwrap()
            .unwrap()
            .message(1)
            .unwrap()
            .unwrap();
        assert_eq!(attrs.string(1).unwrap(), "apps");
        assert_eq!(attrs.string(5).unwrap(), "pods");
        assert_eq!(attrs.string(7).unwrap(), "", "absent is empty");
    }

    #[test]
    fn numbers_are_skipped_and_the_last_value_wins() {
        // field 4 varint 300, field 2 fixed64, field 3 fixed32, then field 1 twice.
        let mut buf = vec![0x20, 0xac, 0x02, 0x11];
        buf.extend([0; 8]);
        buf.push(0x1d);
        buf.extend([0; 4]);
        buf.extend(field(1, b"first"));
        buf.extend(field(1, b"last"));
        let m = Message::parse(&buf).unwrap();
        assert_eq!(m.string(1).unwrap(), "last");
        assert_eq!(m.string(4).unwrap(), "", "a number is no string");
    }

    #[test]
    fn hostile_bodies_are_errors_not_panics() {
        assert_eq!(unwrap(b"{\"kind\":1}").unwrap_err(), ProtoError::NoMagic);
        for bad in [
            &b"k8s\0\x0a\x05ab"[..], // length past the end
            &b"k8s\0\x0a"[..],       // no length
            &b"k8s\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"[..], // endless varint
            &b"k8s\0\x0b"[..],       // wire type 3 (groups)
            &b"k8s\0\x09\x01"[..],   // fixed64 cut short
        ] {
            assert!(unwrap(bad).is_err(), "{bad:?}");
        }
        let not_utf8 = [MAGIC, &field(1, &field(2, &[0xff, 0xfe]))].concat();
        assert_eq!(unwrap(&not_utf8).unwrap_err(), ProtoError::NotUtf8(2));
        let gzip = [MAGIC, &field(3, b"gzip")].concat();
        assert!(matches!(unwrap(&gzip), Err(ProtoError::Encoding(_))));
    }
}
