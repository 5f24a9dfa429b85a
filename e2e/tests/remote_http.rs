//! Remote MCP over real HTTP on 127.0.0.1: the server as an OAuth 2.1 resource server.
//! Tokens are signed by an Ed25519 key the test makes; every bad token, a missing scope,
//! a forbidden origin and each limit is refused, and nothing runs or is stored.

#[path = "../../tests/fixtures/desk.rs"]
mod desk;
#[path = "fixtures/mcp_http.rs"]
mod mcp_http;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cairnloop::approvals::MemoryStore;
use cairnloop::gate::LaneState;
use cairnloop::mcp::ClientApprover;
use cairnloop::remote::{HttpLimits, RemoteMcp, TokenVerifier};
use cairnloop::{Governor, RiskTier};
use desk::{DESK, Desk};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const ISSUER: &str = "https://auth.test";

/// An Ed25519 key made for this test run, and a fixed RSA key (RSA keys are slow to
/// make in a debug build): the signing keys and the public JWKS with both.
struct Keys {
    signing: EncodingKey,
    rsa: EncodingKey,
    jwks: String,
    /// The keys' public parts, as an attacker would find them (for algorithm confusion).
    public: Vec<u8>,
    rsa_public_pem: Vec<u8>,
}

fn keys(kid: &str) -> Keys {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    // PKCS#8 for an Ed25519 private key: a fixed prefix, then the 32-byte seed.
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&seed);
    let signing = EncodingKey::from_ed_der(&der);
    let mut jwk = Jwk::from_encoding_key(&signing, Algorithm::EdDSA).unwrap();
    jwk.common.key_id = Some(kid.to_string());
    let public = serde_json::to_value(&jwk).unwrap()["x"]
        .as_str()
        .unwrap()
        .as_bytes()
        .to_vec();
    let rsa = EncodingKey::from_rsa_pem(include_bytes!("fixtures/rsa-test-key.pem")).unwrap();
    let mut rsa_jwk = Jwk::from_encoding_key(&rsa, Algorithm::RS256).unwrap();
    rsa_jwk.common.key_id = Some("rsa1".into());
    let jwks = serde_json::to_string(&JwkSet {
        keys: vec![jwk, rsa_jwk],
    })
    .unwrap();
    Keys {
        signing,
        rsa,
        jwks,
        public,
        rsa_public_pem: include_bytes!("fixtures/rsa-test-key.pub.pem").to_vec(),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

struct Server {
    base: String,
    audience: String,
    keys: Keys,
    governor: Arc<Governor<Desk, MemoryStore>>,
    stop: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.abort();
    }
}

async fn serve(limits: HttpLimits, approver: Option<ClientApprover>) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let base = format!("http://{address}");
    let audience = format!("{base}/mcp");
    let keys = keys("k1");
    let verifier = TokenVerifier::new(ISSUER, &audience, &keys.jwks)
        .unwrap()
        .with_account_claim("tenant");
    let governor = Arc::new(Governor::new(&DESK));
    let mut remote = RemoteMcp::new(Arc::clone(&governor), Desk::default(), verifier)
        .with_authorization_server(ISSUER)
        .with_limits(limits)
        .with_allowed_origins(["http://localhost:6274"]);
    if let Some(approver) = approver {
        remote = remote.with_client_approver(approver);
    }
    let router = remote.router();
    let stop = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    Server {
        base,
        audience,
        keys,
        governor,
        stop,
    }
}

impl Server {
    fn claims(&self, sub: &str, scope: &str) -> Value {
        json!({
            "iss": ISSUER, "aud": self.audience, "sub": sub, "azp": "test-client",
            "scope": scope, "tenant": "acme", "exp": now() + 300, "nbf": now() - 5,
        })
    }

    fn token(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(&header, claims, &self.keys.signing).unwrap()
    }

    fn good(&self, scope: &str) -> String {
        self.token(&self.claims("alice", scope))
    }

    async fn post(
        &self,
        token: Option<&str>,
        body: &str,
        extra: &[(&str, &str)],
    ) -> reqwest::Response {
        mcp_http::post(&self.base, token, body, extra).await
    }

    async fn session(&self, token: &str, capabilities: Value) -> String {
        mcp_http::session(&self.base, token, capabilities).await
    }
}

use mcp_http::{call, messages};

#[path = "../../tests/fixtures/identities.rs"]
mod identities;

async fn lanes(server: &Server, state: LaneState) -> usize {
    server.governor.lanes(state, None, 100).await.unwrap().len()
}

#[tokio::test]
async fn a_good_token_lists_and_calls_as_its_subject_and_client() {
    let server = serve(HttpLimits::new(), None).await;
    let token = server.good("orders:read tickets:write");
    let session = server.session(&token, json!({})).await;
    let sid = [("mcp-session-id", session.as_str())];
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let listed = messages(server.post(Some(&token), &list, &sid).await).await;
    let names: Vec<&str> = listed[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lookup_order", "internal_note", "tag_ticket"]);
    let ran = messages(
        server
            .post(
                Some(&token),
                &call(2, "lookup_order", r#"{"order": 1001}"#),
                &sid,
            )
            .await,
    )
    .await;
    assert_eq!(
        ran[0]["result"]["structuredContent"]["output"], "shipped",
        "{ran:?}"
    );
    // The call was made by the client acting for the subject, in the token's account.
    let events = server.governor.events().await.unwrap();
    let recorded = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(recorded["actor_id"], "alice via test-client");
    assert_eq!(recorded["account_id"], "acme");
    // Duplicate keys reach the strict decoder as the client wrote them.
    let dup = messages(
        server
            .post(
                Some(&token),
                &call(3, "lookup_order", r#"{"order": 1, "order": 2}"#),
                &sid,
            )
            .await,
    )
    .await;
    assert_eq!(
        dup[0]["result"]["structuredContent"]["code"], "needs_input",
        "{dup:?}"
    );
    assert_eq!(
        dup[0]["result"]["structuredContent"]["errors"][0]["code"],
        "duplicate_key"
    );
}

#[tokio::test]
async fn an_rs256_token_from_the_rsa_key_is_accepted() {
    let server = serve(HttpLimits::new(), None).await;
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa1".into());
    let token = jsonwebtoken::encode(
        &header,
        &server.claims("alice", "orders:read"),
        &server.keys.rsa,
    )
    .unwrap();
    let session = server.session(&token, json!({})).await;
    let answer = server
        .post(
            Some(&token),
            &call(1, "lookup_order", r#"{"order": 1001}"#),
            &[("mcp-session-id", &session)],
        )
        .await;
    let ran = messages(answer).await;
    assert_eq!(
        ran[0]["result"]["structuredContent"]["output"], "shipped",
        "{ran:?}"
    );
}

#[tokio::test]
async fn a_deleted_session_is_over() {
    let server = serve(HttpLimits::new(), None).await;
    let token = server.good("orders:read");
    let session = server.session(&token, json!({})).await;
    let deleted = reqwest::Client::new()
        .delete(format!("{}/mcp", server.base))
        .bearer_auth(&token)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let after = server
        .post(Some(&token), &list_body(), &[("mcp-session-id", &session)])
        .await;
    assert_eq!(after.status(), 404, "a request on a deleted session");
    // Without a token, a session cannot be deleted.
    let anonymous = reqwest::Client::new()
        .delete(format!("{}/mcp", server.base))
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}

#[tokio::test]
async fn the_metadata_and_the_challenge_point_to_each_other() {
    let server = serve(HttpLimits::new(), None).await;
    let response = server.post(None, &list_body(), &[]).await;
    assert_eq!(response.status(), 401);
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    let url = format!("{}/.well-known/oauth-protected-resource/mcp", server.base);
    assert_eq!(challenge, format!("Bearer resource_metadata=\"{url}\""));
    let metadata: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    assert_eq!(metadata["resource"], server.audience);
    assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
    assert!(
        metadata["scopes_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("refunds:write"))
    );
    let root: Value = reqwest::get(format!(
        "{}/.well-known/oauth-protected-resource",
        server.base
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(root, metadata);
}

fn list_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string()
}

#[tokio::test]
async fn every_bad_token_is_refused_and_nothing_is_recorded() {
    let server = serve(HttpLimits::new(), None).await;
    let base = server.claims("alice", "orders:read");
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = base.clone();
        change(&mut claims);
        server.token(&claims)
    };
    let other = keys("k1"); // the same kid, another key: a forged signature
    let forged = {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(&header, &base, &other.signing).unwrap()
    };
    let unknown_kid = {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("k9".into());
        jsonwebtoken::encode(&header, &base, &server.keys.signing).unwrap()
    };
    // HS256 "signed" with the server's public key: the algorithm-confusion attack.
    let confused = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(
            &header,
            &base,
            &EncodingKey::from_secret(&server.keys.public).unwrap(),
        )
        .unwrap()
    };
    // HS256 "signed" with the RSA key's public PEM: the classic confusion attack.
    let confused_rsa = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("rsa1".into());
        let secret = EncodingKey::from_secret(&server.keys.rsa_public_pem).unwrap();
        jsonwebtoken::encode(&header, &base, &secret).unwrap()
    };
    // An RS256 token under the Ed25519 key's id: the key decides the algorithm.
    let wrong_key_alg = {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(&header, &base, &server.keys.rsa).unwrap()
    };
    let payload = base64url(&serde_json::to_vec(&base).unwrap());
    let unsigned = format!("{}.{payload}.", base64url(br#"{"alg":"none","kid":"k1"}"#));
    let tampered = {
        let good = server.good("orders:read");
        let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
        let mut claims = base.clone();
        claims["scope"] = json!("orders:read refunds:write");
        parts[1] = base64url(&serde_json::to_vec(&claims).unwrap());
        parts.join(".")
    };
    let cases: Vec<(&str, Option<String>, &str)> = vec![
        ("missing", None, "no bearer token"),
        ("malformed", Some("not.a.jwt".into()), "malformed"),
        ("bad signature", Some(forged), "signature does not verify"),
        (
            "tampered claims",
            Some(tampered),
            "signature does not verify",
        ),
        ("alg none", Some(unsigned), "algorithm is not accepted"),
        (
            "HS256 with the public key",
            Some(confused),
            "algorithm is not accepted",
        ),
        (
            "HS256 with the RSA public key",
            Some(confused_rsa),
            "algorithm is not accepted",
        ),
        (
            "RS256 under an Ed25519 kid",
            Some(wrong_key_alg),
            "algorithm is not accepted",
        ),
        (
            "expired",
            Some(with(&|c| c["exp"] = json!(now() - 3_600))),
            "expired",
        ),
        (
            "not yet valid",
            Some(with(&|c| c["nbf"] = json!(now() + 3_600))),
            "not valid yet",
        ),
        (
            "another audience",
            Some(with(&|c| c["aud"] = json!("https://other.example/mcp"))),
            "another resource",
        ),
        (
            "another issuer",
            Some(with(&|c| c["iss"] = json!("https://evil.example"))),
            "issuer is not trusted",
        ),
        ("unknown kid", Some(unknown_kid), "key is unknown"),
        (
            "wildcard scope",
            Some(with(&|c| c["scope"] = json!("orders:*"))),
            "a wildcard",
        ),
        (
            "odd whitespace",
            Some(with(&|c| c["scope"] = json!("orders:read\ttickets:write"))),
            "scope claim is not accepted",
        ),
        (
            "double space",
            Some(with(&|c| c["scope"] = json!("orders:read  tickets:write"))),
            "repeated spaces",
        ),
        (
            "no sub",
            Some(with(&|c| {
                c.as_object_mut().unwrap().remove("sub");
            })),
            "no sub claim",
        ),
    ];
    for (case, token, why) in cases {
        let body = call(1, "lookup_order", r#"{"order": 1001}"#);
        let response = server.post(token.as_deref(), &body, &[]).await;
        assert_eq!(response.status(), 401, "{case}");
        let challenge = response.headers()["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Bearer "), "{case}: {challenge}");
        assert!(challenge.contains("resource_metadata=\""), "{case}");
        if token.is_some() {
            assert!(
                challenge.contains("error=\"invalid_token\""),
                "{case}: {challenge}"
            );
        }
        let said: Value = response.json().await.unwrap();
        let said = said["error_description"].as_str().unwrap();
        assert!(said.contains(why), "{case}: {said}");
    }
    assert!(
        server.governor.events().await.unwrap().is_empty(),
        "nothing was recorded"
    );
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

#[tokio::test]
async fn a_missing_scope_is_the_insufficient_scope_challenge() {
    let server = serve(HttpLimits::new(), None).await;
    let token = server.good("orders:read");
    let session = server.session(&token, json!({})).await;
    let body = call(
        1,
        "refund_order",
        r#"{"order": 1001, "cents": 5, "reason": "late"}"#,
    );
    let response = server
        .post(Some(&token), &body, &[("mcp-session-id", &session)])
        .await;
    assert_eq!(response.status(), 403);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"orders:read refunds:write\""),
        "{challenge}"
    );
    assert_eq!(lanes(&server, LaneState::Pending).await, 0);
    assert!(server.governor.events().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_forbidden_origin_a_big_body_a_deep_one_and_a_flood_are_refused() {
    let limits = HttpLimits::new()
        .with_max_body_bytes(4_096)
        .with_max_depth(8)
        .with_requests_per_minute(5);
    let server = serve(limits, None).await;
    let token = server.good("orders:read tickets:write");
    let evil = server
        .post(
            Some(&token),
            &list_body(),
            &[("origin", "http://evil.example")],
        )
        .await;
    assert_eq!(evil.status(), 403);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"internal_note","arguments":{{"ticket":1,"body":"{}"}}}}}}"#,
        "x".repeat(8_192)
    );
    assert_eq!(server.post(Some(&token), &big, &[]).await.status(), 413);
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"internal_note","arguments":{{"ticket":1,"body":{}1{}}}}}}}"#,
        "[".repeat(20),
        "]".repeat(20)
    );
    let answer = server.post(Some(&token), &deep, &[]).await;
    assert_eq!(answer.status(), 400);
    let error: Value = answer.json().await.unwrap();
    assert_eq!(
        (error["id"].clone(), error["error"]["code"].clone()),
        (json!(7), json!(-32600))
    );
    // Three requests so far count; two more pass the rate check, then 429.
    for _ in 0..2 {
        assert_ne!(
            server.post(Some(&token), &list_body(), &[]).await.status(),
            429
        );
    }
    let flood = server.post(Some(&token), &list_body(), &[]).await;
    assert_eq!(flood.status(), 429);
    assert!(flood.headers().contains_key("retry-after"));
    // Another subject has its own budget.
    let bob = server.token(&server.claims("bob", "orders:read"));
    assert_ne!(
        server.post(Some(&bob), &list_body(), &[]).await.status(),
        429
    );
    assert_eq!(lanes(&server, LaneState::Pending).await, 0);
}

#[tokio::test]
async fn an_approval_by_elicitation_over_http_runs_the_call_once() {
    let approver = ClientApprover::new("(each token's subject)").may_approve(RiskTier::LowWrite);
    let server = serve(HttpLimits::new(), Some(approver)).await;
    let token = server.good("tickets:write");
    let session = server
        .session(&token, json!({"elicitation": {"form": {}}}))
        .await;
    let sid = [("mcp-session-id", session.as_str())];
    let note = call(
        5,
        "internal_note",
        r#"{"ticket": 42, "body": "Called twice."}"#,
    );
    let mut stream = server.post(Some(&token), &note, &sid).await;
    assert_eq!(stream.status(), 200);
    // Read the event stream until the prompt comes, answer it on a second request, then
    // read on until the call's result.
    let mut buffer = String::new();
    let mut result = None;
    while result.is_none() {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .expect("the stream goes on")
            .unwrap()
            .expect("the stream is not over");
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let Some(data) = event.lines().find_map(|line| line.strip_prefix("data:")) else {
                continue;
            };
            let Ok(message) = serde_json::from_str::<Value>(data.trim()) else {
                continue;
            };
            if message["method"] == "elicitation/create" {
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "action": "accept", "content": {"decision": "approve"}}});
                let posted = server.post(Some(&token), &answer.to_string(), &sid).await;
                assert_eq!(posted.status(), 202);
            } else if message["id"] == 5 {
                result = Some(message);
            }
        }
    }
    let result = result.unwrap();
    assert_eq!(
        result["result"]["structuredContent"]["status"], "executed",
        "{result}"
    );
    let executed = server
        .governor
        .lanes(LaneState::Executed, None, 10)
        .await
        .unwrap();
    assert_eq!(executed.len(), 1);
    assert_eq!(
        (executed[0].attempts(), executed[0].decided_by()),
        (1, Some("alice"))
    );
    assert_eq!(executed[0].proposal().actor_id(), "alice via test-client");
}

#[tokio::test]
async fn the_identity_table_through_the_remote_server() {
    use identities::{Verdict, variants};
    let limits = HttpLimits::new()
        .with_requests_per_minute(10_000)
        .with_burst(1_000);
    let server = serve(limits, None).await;
    for (variant, what, verdict) in variants() {
        let token = server.token(&server.claims(&variant, "orders:read"));
        let body = call(1, "lookup_order", r#"{"order": 1001}"#);
        let response = server.post(Some(&token), &body, &[]).await;
        if verdict == Verdict::Refused {
            assert_eq!(response.status(), 401, "{what}");
            let said: Value = response.json().await.unwrap();
            let said = said["error_description"].as_str().unwrap_or_default();
            assert!(
                said.contains("sub claim is refused") || said.contains("no sub claim"),
                "{what}: {said}"
            );
        } else {
            // A valid id is let in (the request itself, sent without a session, is then
            // answered by the MCP layer).
            assert_ne!(response.status(), 401, "{what}");
        }
    }
    assert!(
        server.governor.events().await.unwrap().is_empty(),
        "nothing was recorded for a refused subject"
    );
}

#[tokio::test]
async fn a_session_answers_only_the_caller_who_opened_it() {
    let server = serve(HttpLimits::new(), None).await;
    let alice = server.good("orders:read");
    let session = server.session(&alice, json!({})).await;
    let sid = [("mcp-session-id", session.as_str())];
    let lookup = call(1, "lookup_order", r#"{"order": 1001}"#);
    // Bob holds a valid token of his own, and alice's session id.
    let bob = server.token(&server.claims("bob", "orders:read"));
    let stolen = server.post(Some(&bob), &lookup, &sid).await;
    assert_eq!(stolen.status(), 404);
    // The same subject through another client is another caller too.
    let mut other_client = server.claims("alice", "orders:read");
    other_client["azp"] = json!("another-client");
    let other_client = server.token(&other_client);
    assert_eq!(
        server
            .post(Some(&other_client), &lookup, &sid)
            .await
            .status(),
        404
    );
    // An id this server never opened.
    let made_up = [("mcp-session-id", "not-a-session")];
    assert_eq!(
        server.post(Some(&alice), &lookup, &made_up).await.status(),
        404
    );
    assert!(
        server.governor.events().await.unwrap().is_empty(),
        "nothing ran"
    );
    // Alice's own token still works in her session.
    let ran = messages(server.post(Some(&alice), &lookup, &sid).await).await;
    assert_eq!(
        ran[0]["result"]["structuredContent"]["output"], "shipped",
        "{ran:?}"
    );
}
