//! The request an HTTP tool call makes: its URL from the template and the
//! arguments, then the remaining arguments and the declared `fields` as
//! query parameters or a JSON body. A model-supplied value is percent-
//! encoded into the path or query and can never change the scheme, host
//! or port: the built URL's origin is checked against the template's.

use deepfleet_proto::http_tool::{HttpToolSpec, placeholders};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};
use url::Url;

/// What a placeholder's value keeps unencoded: RFC 3986's unreserved
/// characters but `.`, so no value forms a `..` segment.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'~');

/// A call's URL and body.
#[derive(Debug, PartialEq)]
pub struct Request {
    pub url: Url,
    /// The JSON body, for methods that send one.
    pub body: Option<Value>,
}

/// Builds the request for `args` (already checked against the schema)
/// plus the resolved `fields`; the error is for the model.
pub fn build(
    tool: &HttpToolSpec,
    mut args: Map<String, Value>,
    fields: Map<String, Value>,
) -> Result<Request, String> {
    let mut url = tool.url.clone();
    for name in placeholders(&tool.url) {
        let value = args
            .remove(name)
            .ok_or_else(|| format!("argument `{name}` is required (it is part of the URL)"))?;
        let text = scalar(name, &value)?;
        if text.is_empty() || text.chars().all(|c| c == '.') {
            return Err(format!("argument `{name}` may not be empty or only dots"));
        }
        let encoded = utf8_percent_encode(&text, COMPONENT).to_string();
        url = url.replacen(&format!("{{{name}}}"), &encoded, 1);
    }
    let mut url = Url::parse(&url).map_err(|e| format!("the URL does not parse: {e}"))?;
    let template = Url::parse(&template_origin(&tool.url))
        .map_err(|e| format!("the tool's URL does not parse: {e}"))?;
    if url.origin() != template.origin() {
        return Err("the arguments would change the URL's host".to_owned());
    }
    args.extend(fields);
    if tool.method.has_body() {
        return Ok(Request {
            url,
            body: Some(Value::Object(args)),
        });
    }
    if !args.is_empty() {
        let mut query = url.query_pairs_mut();
        for (name, value) in &args {
            query.append_pair(name, &scalar(name, value)?);
        }
    }
    Ok(Request { url, body: None })
}

/// The template up to its origin, placeholders and all past it dropped.
fn template_origin(url: &str) -> String {
    let end = deepfleet_proto::http_tool::origin_end(url).unwrap_or(url.len());
    format!("{}/", &url[..end])
}

/// A value as a URL component: strings as they are, numbers and booleans
/// written out; anything else does not fit in a URL.
fn scalar(name: &str, value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(format!(
            "argument `{name}` must be a string, number or boolean to go into the URL"
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(url: &str, method: &str) -> HttpToolSpec {
        serde_norway::from_str(&format!(
            "name: t\ndescription: d\nmethod: {method}\nurl: \"{url}\"\nparameters: {{type: object, properties: {{key: {{type: string}}, q: {{type: string}}}}}}\n"
        ))
        .unwrap()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn placeholders_are_encoded_and_the_rest_goes_to_the_query() {
        let t = tool("http://h.example:8080/tickets/{key}", "GET");
        let r = build(
            &t,
            args(json!({"key": "a b/c?d#e", "q": "x&y"})),
            Map::new(),
        )
        .unwrap();
        assert_eq!(
            r.url.as_str(),
            "http://h.example:8080/tickets/a%20b%2Fc%3Fd%23e?q=x%26y"
        );
        assert_eq!(r.body, None);
    }

    #[test]
    fn no_value_reaches_another_host_or_climbs_the_path() {
        let t = tool("http://h.example/a/{key}", "GET");
        for hostile in ["@evil.example", "//evil.example/x", "..", "."] {
            let r = build(&t, args(json!({"key": hostile})), Map::new());
            if let Ok(r) = r {
                assert_eq!(r.url.host_str(), Some("h.example"), "{hostile}");
                assert!(r.url.path().starts_with("/a/"), "{hostile}: {}", r.url);
            }
        }
        assert!(build(&t, args(json!({"key": ".."})), Map::new()).is_err());
        let e = build(&t, args(json!({"key": {"x": 1}})), Map::new()).unwrap_err();
        assert!(e.contains("string, number or boolean"), "{e}");
        let e = build(&t, Map::new(), Map::new()).unwrap_err();
        assert!(e.contains("`key` is required"), "{e}");
    }

    #[test]
    fn a_body_method_sends_arguments_and_fields_as_json() {
        let t = tool("https://h.example/tickets", "POST");
        let r = build(
            &t,
            args(json!({"q": "find"})),
            args(json!({"user_id": "u-1"})),
        )
        .unwrap();
        assert_eq!(r.body, Some(json!({"q": "find", "user_id": "u-1"})));
        assert_eq!(r.url.as_str(), "https://h.example/tickets");
    }
}
