#![allow(dead_code)]

use std::time::Duration;

use factory_sandbox::{Sandbox, SandboxHandle, SandboxOptions};
use serde_json::{Value, json};

pub async fn manual() -> SandboxHandle {
    Sandbox::start(SandboxOptions::manual_clock())
        .await
        .expect("sandbox starts")
}

pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub key: String,
}

impl Client {
    pub fn new(sb: &SandboxHandle, user: usize) -> Self {
        Self {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .expect("client"),
            base: sb.base_url(),
            key: sb.api_key(user).expect("seeded user"),
        }
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.key)
            .send()
            .await
            .expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn put(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::PUT, path, None).await
    }

    /// Creates a run and returns its id.
    pub async fn create(&self, body: Value) -> String {
        let (status, v) = self.post("/api/v1/training/runs", body).await;
        assert_eq!(status, 201, "create answered {v}");
        v["runId"].as_str().expect("runId").to_string()
    }

    pub async fn status(&self, id: &str) -> String {
        let (s, v) = self.get(&format!("/api/v1/rft/runs/{id}")).await;
        assert_eq!(s, 200, "{v}");
        v["run"]["status"].as_str().expect("status").to_string()
    }
}

/// A small healthy RL config.
pub fn rl_config(name: &str, max_steps: u32) -> Value {
    json!({
        "name": name,
        "max_steps": max_steps,
        "model": {"name": "PrimeIntellect/Qwen3-0.6B"},
        "orchestrator": {
            "batch_size": 32,
            "group_size": 8,
            "train": {"source": [{"name": "reverse-text", "env": {"taskset": {"id": "reverse-text"}}}]},
        },
        "trainer": {"optim": {"lr": 3e-6}},
    })
}

pub fn run_body(name: &str, max_steps: u32) -> Value {
    json!({"config": rl_config(name, max_steps), "name": name})
}

pub fn advance(sb: &SandboxHandle, secs: u64) {
    sb.advance(Duration::from_secs(secs));
}
