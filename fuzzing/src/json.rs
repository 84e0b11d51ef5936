//! Round trips through JSON, compared as JSON.
//!
//! Values are compared after encoding, so types without `PartialEq` are
//! checked too. Floats may differ in their last bit: serde_json's default
//! float parsing is best effort (its `float_roundtrip` feature is off in
//! the workspace), and the fuzz build must not switch on features the
//! shipped binaries do not have.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Encodes `value`, decodes the text again and asserts that nothing
/// changed: what a decoder accepted, its encoder must write back readably.
pub fn assert_round_trip<T: Serialize + DeserializeOwned>(value: &T) {
    let text = match serde_json::to_string(value) {
        Ok(text) => text,
        Err(e) => panic!("a decoded value does not encode: {e}"),
    };
    let back: T = match serde_json::from_str(&text) {
        Ok(back) => back,
        Err(e) => panic!("an encoded value does not decode: {e}\n{text}"),
    };
    assert_same(value, &back);
}

/// Asserts that `a` and `b` encode to the same JSON (floats within one
/// unit in the last place).
pub fn assert_same<T: Serialize>(a: &T, b: &T) {
    let (a, b) = (encoded(a), encoded(b));
    assert!(same(&a, &b), "values differ:\n{a}\n{b}");
}

fn encoded<T: Serialize>(value: &T) -> Value {
    match serde_json::to_value(value) {
        Ok(value) => value,
        Err(e) => panic!("a decoded value does not encode: {e}"),
    }
}

/// Structural equality, floats within one unit in the last place.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.is_f64(), y.is_f64()) {
            (true, true) => x.as_f64().zip(y.as_f64()).is_some_and(|(x, y)| close(x, y)),
            (false, false) => x == y,
            _ => false,
        },
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(k, x)| ys.get(k).is_some_and(|y| same(x, y)))
        }
        _ => a == b,
    }
}

fn close(x: f64, y: f64) -> bool {
    x == y || (x.signum() == y.signum() && x.to_bits().abs_diff(y.to_bits()) <= 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_may_differ_in_the_last_bit_only() {
        let x = 0.1_f64;
        let next = f64::from_bits(x.to_bits() + 1);
        let far = f64::from_bits(x.to_bits() + 2);
        assert!(same(&json!([x]), &json!([next])));
        assert!(!same(&json!([x]), &json!([far])));
        assert!(!same(&json!({"a": 1}), &json!({"a": 1.0})));
        assert!(!same(&json!({"a": 1}), &json!({"b": 1})));
    }
}
