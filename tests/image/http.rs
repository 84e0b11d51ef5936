//! Plain HTTP/1.0 to 127.0.0.1, as a kubelet probe or `curl` would send it
//! (1.0, so every answer ends with the connection and needs no chunked
//! decoding).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// `(status, body)` of one request; status 0 when nothing answers.
pub fn request(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    request_as(port, None, method, path, body)
}

/// [`request`] presenting the API key `key` in `x-api-key`.
pub fn request_as(
    port: u16,
    key: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String) {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, String::new());
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body = body.unwrap_or_default();
    let key = key
        .map(|k| format!("x-api-key: {k}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{key}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    if stream.write_all(head.as_bytes()).is_err() || stream.write_all(body.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut answer = Vec::new();
    if stream.read_to_end(&mut answer).is_err() {
        return (0, String::new());
    }
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

/// The status of `GET path`, as a probe sees it.
pub fn status(port: u16, path: &str) -> u16 {
    request(port, "GET", path, None).0
}
