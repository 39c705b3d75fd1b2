//! The process floor of a cold start: what spawning *any* MCP server over stdio costs on this
//! machine, measured with the same client and the same answers as `factory-mcp serve`.
//!
//! `null-mcp FILE` answers each JSON-RPC request read from stdin with the canned result for
//! its method from FILE (lines `method<TAB>result-JSON`, written by factory-bench from the real
//! server's own answers), echoing the request's id; notifications are read and ignored. std
//! only, no runtime, no JSON parser: the rest of a real server's start is what this leaves out.

use std::io::{BufRead, Write};

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(key)? + key.len();
    let rest = line[at..].trim_start_matches([' ', ':']);
    if let Some(s) = rest.strip_prefix('"') {
        return s.split('"').next();
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: null-mcp FILE");
    let canned = std::fs::read_to_string(&path).expect("read the canned answers");
    let answers: Vec<(&str, &str)> = canned.lines().filter_map(|l| l.split_once('\t')).collect();
    let stdin = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        let (Some(method), Some(id)) = (field(&line, "\"method\""), field(&line, "\"id\"")) else {
            continue;
        };
        let id = if line.contains(&format!("\"id\":\"{id}\"")) {
            format!("\"{id}\"")
        } else {
            id.to_string()
        };
        let result = answers
            .iter()
            .find(|(m, _)| *m == method)
            .map_or("{}", |(_, r)| *r);
        let _ = writeln!(
            out,
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}"
        );
        let _ = out.flush();
    }
}
