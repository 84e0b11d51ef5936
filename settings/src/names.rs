//! The name of every setting, read off the settings types themselves: a
//! probe deserializer hands each struct every field it declares and
//! records the dotted path of each value it is asked for, so a new field
//! is named here without anyone listing it. A map level (provider names,
//! profile keys, tool names) is one `<name>` segment.

use serde::Deserialize;
use serde::de::value::{Error, StrDeserializer};
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};

/// The segment standing for any key of a map.
pub const ANY: &str = "<name>";

/// Every leaf setting of `T`, as dotted paths (`worker.grace_secs`,
/// `providers.<name>.base_url`), in declaration order.
pub fn of<'de, T: Deserialize<'de>>() -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    T::deserialize(Probe {
        path: String::new(),
        out: &mut out,
    })?;
    Ok(out)
}

/// Whether `key` (dotted, lowercase) names the setting `name`.
pub fn matches(name: &str, key: &str) -> bool {
    let (mut name, mut key) = (name.split('.'), key.split('.'));
    loop {
        match (name.next(), key.next()) {
            (None, None) => return true,
            (Some(n), Some(k)) if n == ANY || n == k => {}
            _ => return false,
        }
    }
}

/// Deserializes the value at `path`, pushing the path of every leaf
/// beneath it onto `out`.
struct Probe<'a> {
    path: String,
    out: &'a mut Vec<String>,
}

impl Probe<'_> {
    fn leaf(self) {
        self.out.push(self.path);
    }

    fn child(&mut self, segment: &str) -> Probe<'_> {
        let path = if self.path.is_empty() {
            segment.to_owned()
        } else {
            format!("{}.{segment}", self.path)
        };
        Probe {
            path,
            out: self.out,
        }
    }
}

/// Leaves answer with a zero value of the kind asked for.
macro_rules! leaf {
    ($($method:ident => $visit:ident($($value:expr)?)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.leaf();
            visitor.$visit($($value)?)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Error;

    leaf! {
        deserialize_any => visit_unit(),
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i64(0),
        deserialize_i16 => visit_i64(0),
        deserialize_i32 => visit_i64(0),
        deserialize_i64 => visit_i64(0),
        deserialize_u8 => visit_u64(0),
        deserialize_u16 => visit_u64(0),
        deserialize_u32 => visit_u64(0),
        deserialize_u64 => visit_u64(0),
        deserialize_f32 => visit_f64(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('a'),
        deserialize_str => visit_str(""),
        deserialize_string => visit_str(""),
        deserialize_bytes => visit_bytes(&[]),
        deserialize_byte_buf => visit_bytes(&[]),
        deserialize_unit => visit_unit(),
        deserialize_identifier => visit_str(""),
        deserialize_ignored_any => visit_unit(),
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.leaf();
        visitor.visit_seq(de::value::SeqDeserializer::new(std::iter::empty::<()>()))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.leaf();
        let first = variants.first().copied().unwrap_or_default();
        visitor.visit_enum(first.into_deserializer())
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_map(Entries {
            keys: [ANY].into_iter(),
            pending: ANY,
            probe: self,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_map(Entries {
            keys: fields.iter().copied(),
            pending: "",
            probe: self,
        })
    }
}

/// A struct's fields, or a map's one `<name>` entry, each value probed
/// one level down.
struct Entries<'a, I> {
    keys: I,
    /// The key whose value comes next.
    pending: &'static str,
    probe: Probe<'a>,
}

impl<'de, I: Iterator<Item = &'static str>> MapAccess<'de> for Entries<'_, I> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(key) = self.keys.next() else {
            return Ok(None);
        };
        self.pending = key;
        seed.deserialize(StrDeserializer::<Error>::new(key))
            .map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self.probe.child(self.pending))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_level_matches_any_one_key() {
        assert!(matches("worker.grace_secs", "worker.grace_secs"));
        assert!(matches(
            "providers.<name>.api_key",
            "providers.openai.api_key"
        ));
        assert!(!matches("providers.<name>.api_key", "providers.api_key"));
        assert!(!matches("worker.grace_secs", "worker"));
        assert!(!matches("worker", "worker.grace_secs"));
    }
}
