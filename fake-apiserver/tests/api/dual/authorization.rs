//! Authorization: a ServiceAccount may do what its (Cluster)RoleBindings grant and nothing more,
//! refusals are kube-apiserver's 403s word for word, and the access reviews (SubjectAccessReview,
//! LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview)
//! are answered from the same rules.
//!
//! kube-apiserver's RBAC authorizer reads bindings from an informer, so a new grant takes effect a
//! moment later there: [`until_allowed`] waits for it.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::Client;
use kube::api::PostParams;
use serde_json::{Value, json};

use super::{Env, Raw, dual, raw_by};

dual!(
    a_service_account_may_do_what_its_role_grants_and_no_more,
    access_reviews_are_answered_from_rbac,
    who_am_i_and_what_may_i_do_here,
    a_binding_to_a_missing_role_is_the_reason_of_a_refusal,
);

/// The ServiceAccount `robot` of the test's namespace, with a client that presents its token.
struct Robot {
    client: Client,
    user: String,
    uid: String,
}

impl Robot {
    async fn new(env: &Env) -> Robot {
        let sa: ServiceAccount =
            serde_json::from_value(json!({"metadata": {"name": "robot"}})).expect("an SA");
        let sa = env
            .api::<ServiceAccount>()
            .create(&PostParams::default(), &sa)
            .await
            .expect("create SA");
        let issued = post(
            &env.client,
            &format!("/api/v1/namespaces/{}/serviceaccounts/robot/token", env.ns),
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        )
        .await;
        let token = issued.body["status"]["token"].as_str().expect("a token");
        Robot {
            client: env.client_with_token(token).await,
            user: format!("system:serviceaccount:{}:robot", env.ns),
            uid: sa.metadata.uid.expect("a uid"),
        }
    }

    async fn get(&self, path: &str) -> Raw {
        raw_by(&self.client, "GET", path, &[], Vec::new()).await
    }
}

async fn post(client: &Client, path: &str, body: Value) -> Raw {
    raw_by(
        client,
        "POST",
        path,
        &[("content-type", "application/json")],
        body.to_string(),
    )
    .await
}

/// A Role of these rules in the test's namespace, bound to `robot` by a RoleBinding of the same
/// name (`role_ref` names the role the binding refers to).
async fn grant(env: &Env, name: &str, role_ref: &str, rules: Value) {
    let rbac = |kind: &str| {
        format!(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{}/{kind}",
            env.ns
        )
    };
    let role = post(
        &env.client,
        &rbac("roles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": name}, "rules": rules}),
    )
    .await;
    assert_eq!(role.code, 201, "{}", role.text);
    let binding = post(
        &env.client,
        &rbac("rolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_ref},
               "subjects": [{"kind": "ServiceAccount", "name": "robot"}]}),
    )
    .await;
    assert_eq!(binding.code, 201, "{}", binding.text);
}

/// Read ConfigMaps in the test's namespace.
fn config_map_reader() -> Value {
    json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}])
}

/// Wait until `check` holds: at once on the fake; on kube-apiserver once its RBAC informer has
/// seen the latest bindings.
async fn until_allowed<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    for _ in 0..300 {
        tick.tick().await;
        if check().await {
            return;
        }
    }
    panic!("{what}: not allowed after 30 s");
}

fn forbidden(message: String, details: Value) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": "Forbidden", "details": details, "code": 403})
}

async fn a_service_account_may_do_what_its_role_grants_and_no_more(env: Env) {
    let robot = Robot::new(&env).await;
    let ns = &env.ns;
    grant(&env, "cm-reader", "cm-reader", config_map_reader()).await;
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "x"}})).expect("a ConfigMap");
    env.api::<ConfigMap>()
        .create(&PostParams::default(), &cm)
        .await
        .expect("create ConfigMap");
    let x = format!("/api/v1/namespaces/{ns}/configmaps/x");
    until_allowed("get the ConfigMap", || async {
        robot.get(&x).await.code == 200
    })
    .await;
    let listed = robot
        .get(&format!("/api/v1/namespaces/{ns}/configmaps"))
        .await;
    assert_eq!(listed.code, 200, "{}", listed.text);

    let user = &robot.user;
    let cannot = |verb: &str, resource: &str, group: &str, scope: &str| {
        format!(
            "User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}"
        )
    };
    let here = format!("in the namespace \"{ns}\"");
    let refused = [
        (
            "GET",
            format!("/api/v1/namespaces/{ns}/secrets/s"),
            forbidden(
                format!(
                    "secrets \"s\" is forbidden: {}",
                    cannot("get", "secrets", "", &here)
                ),
                json!({"name": "s", "kind": "secrets"}),
            ),
        ),
        (
            "DELETE",
            x.clone(),
            forbidden(
                format!(
                    "configmaps \"x\" is forbidden: {}",
                    cannot("delete", "configmaps", "", &here)
                ),
                json!({"name": "x", "kind": "configmaps"}),
            ),
        ),
        (
            "POST",
            format!("/api/v1/namespaces/{ns}/configmaps"),
            forbidden(
                format!(
                    "configmaps is forbidden: {}",
                    cannot("create", "configmaps", "", &here)
                ),
                json!({"kind": "configmaps"}),
            ),
        ),
        (
            "GET",
            "/api/v1/configmaps".to_string(),
            forbidden(
                format!(
                    "configmaps is forbidden: {}",
                    cannot("list", "configmaps", "", "at the cluster scope")
                ),
                json!({"kind": "configmaps"}),
            ),
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps/x".to_string(),
            forbidden(
                format!(
                    "configmaps \"x\" is forbidden: {}",
                    cannot("get", "configmaps", "", "in the namespace \"default\"")
                ),
                json!({"name": "x", "kind": "configmaps"}),
            ),
        ),
        (
            "GET",
            format!("/apis/batch/v1/namespaces/{ns}/jobs?watch=1"),
            forbidden(
                format!(
                    "jobs.batch is forbidden: {}",
                    cannot("watch", "jobs", "batch", &here)
                ),
                json!({"group": "batch", "kind": "jobs"}),
            ),
        ),
        (
            "PUT",
            format!("/apis/batch/v1/namespaces/{ns}/jobs/j/status"),
            forbidden(
                format!(
                    "jobs.batch \"j\" is forbidden: {}",
                    cannot("update", "jobs/status", "batch", &here)
                ),
                json!({"name": "j", "group": "batch", "kind": "jobs"}),
            ),
        ),
        (
            // Refused before anyone looks for it: no 404 for a path nobody serves.
            "GET",
            "/metrics".to_string(),
            forbidden(
                format!("forbidden: User \"{user}\" cannot get path \"/metrics\""),
                json!({}),
            ),
        ),
    ];
    for (method, path, expected) in refused {
        let answer = raw_by(
            &robot.client,
            method,
            &path,
            &[("content-type", "application/json")],
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}"#,
        )
        .await;
        assert_eq!(
            (answer.code, &answer.body),
            (403, &expected),
            "{method} {path}"
        );
    }
    // The refused delete deleted nothing.
    assert_eq!(robot.get(&x).await.code, 200);
    // Discovery and the version are everyone's (system:discovery, system:public-info-viewer).
    for path in ["/version", "/api", "/apis", "/apis/batch/v1"] {
        let answer = robot.get(path).await;
        assert_eq!(answer.code, 200, "{path}: {}", answer.text);
    }

    // Without its account the token is no one's.
    env.api::<ServiceAccount>()
        .delete("robot", &Default::default())
        .await
        .expect("delete SA");
    let unauthorized = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401});
    until_allowed("the token refused", || async {
        robot.get(&x).await.body == unauthorized
    })
    .await;
}

/// A review's status.
async fn review(client: &Client, kind: &str, path: &str, spec: Value) -> Raw {
    post(
        client,
        path,
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}),
    )
    .await
}

const SAR: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
const SSAR: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

async fn access_reviews_are_answered_from_rbac(env: Env) {
    let robot = Robot::new(&env).await;
    let ns = &env.ns;
    grant(&env, "cm-reader", "cm-reader", config_map_reader()).await;
    let get_config_maps = json!({"namespace": ns, "verb": "get", "resource": "configmaps"});
    let robot_may = json!({"user": robot.user, "resourceAttributes": get_config_maps});
    let allowed = json!({
        "allowed": true,
        "reason": format!("RBAC: allowed by RoleBinding \"cm-reader/{ns}\" of Role \"cm-reader\" to ServiceAccount \"robot/{ns}\""),
    });
    until_allowed("the review", || async {
        review(&env.client, "SubjectAccessReview", SAR, robot_may.clone())
            .await
            .body["status"]
            == allowed
    })
    .await;
    let answer = review(&env.client, "SubjectAccessReview", SAR, robot_may.clone()).await;
    assert_eq!(answer.code, 201, "{}", answer.text);
    assert_eq!(
        answer.body["spec"], robot_may,
        "the spec comes back as sent"
    );

    let cases = [
        // Not granted.
        (
            json!({"user": robot.user, "resourceAttributes": {"namespace": ns, "verb": "get", "resource": "secrets"}}),
            json!({"allowed": false}),
        ),
        // Another namespace.
        (
            json!({"user": robot.user, "resourceAttributes": {"namespace": "default", "verb": "get", "resource": "configmaps"}}),
            json!({"allowed": false}),
        ),
        // Masters may do anything, without a reason.
        (
            json!({"user": "someone", "groups": ["system:masters"], "resourceAttributes": {"verb": "delete", "resource": "nodes"}}),
            json!({"allowed": true}),
        ),
    ];
    for (spec, status) in cases {
        let answer = review(&env.client, "SubjectAccessReview", SAR, spec.clone()).await;
        assert_eq!(
            (answer.code, &answer.body["status"]),
            (201, &status),
            "{spec}"
        );
    }

    // The one asking, through their own review.
    let mine = review(
        &robot.client,
        "SelfSubjectAccessReview",
        SSAR,
        json!({"resourceAttributes": get_config_maps}),
    )
    .await;
    assert_eq!((mine.code, &mine.body["status"]), (201, &allowed));
    let not_mine = review(
        &robot.client,
        "SelfSubjectAccessReview",
        SSAR,
        json!({"resourceAttributes": {"namespace": ns, "verb": "delete", "resource": "configmaps"}}),
    )
    .await;
    assert_eq!(not_mine.body["status"], json!({"allowed": false}));
    // A ServiceAccount may not ask about others.
    let others = review(&robot.client, "SubjectAccessReview", SAR, robot_may).await;
    assert_eq!(others.code, 403, "{}", others.text);

    // What reviews may not ask.
    // kube-apiserver leaves the kind out: its handler sees the review after decoding cleared it.
    let invalid = |causes: &[(&str, &str)]| -> (u16, String) {
        let parts: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let summary = if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("[{}]", parts.join(", "))
        };
        (
            422,
            format!(".authorization.k8s.io \"\" is invalid: {summary}"),
        )
    };
    let exactly_one = "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified";
    let refusals = [
        (
            "SubjectAccessReview",
            SAR.to_string(),
            json!({}),
            invalid(&[
                ("spec", exactly_one),
                (
                    "spec.user",
                    "Invalid value: \"\": at least one of user or group must be specified",
                ),
            ]),
        ),
        (
            "LocalSubjectAccessReview",
            format!("/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews"),
            json!({"user": "u", "resourceAttributes": {"namespace": "other", "verb": "get", "resource": "pods"}}),
            invalid(&[(
                "spec.resourceAttributes.namespace",
                "Invalid value: \"other\": must match metadata.namespace",
            )]),
        ),
        (
            "LocalSubjectAccessReview",
            format!("/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews"),
            json!({"user": "u", "nonResourceAttributes": {"path": "/x", "verb": "get"}}),
            invalid(&[(
                "spec.nonResourceAttributes",
                "Invalid value: {\"Path\":\"/x\",\"Verb\":\"get\"}: disallowed on this kind of request",
            )]),
        ),
        (
            "SelfSubjectAccessReview",
            SSAR.to_string(),
            json!({"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}),
            invalid(&[(
                "spec",
                "Invalid value: {\"Path\":\"/x\",\"Verb\":\"get\"}: exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )]),
        ),
    ];
    for (kind, path, spec, expected) in refusals {
        let answer = review(&env.client, kind, &path, spec).await;
        assert_eq!(
            (answer.code, answer.body["message"].as_str().unwrap_or("")),
            (expected.0, expected.1.as_str()),
            "{kind}: {}",
            answer.text
        );
        assert_eq!(
            answer.body["details"]["group"], "authorization.k8s.io",
            "no kind in the details either: {}",
            answer.text
        );
        assert!(
            answer.body["details"].get("kind").is_none(),
            "{}",
            answer.text
        );
    }
}

async fn who_am_i_and_what_may_i_do_here(env: Env) {
    let robot = Robot::new(&env).await;
    let ns = &env.ns;
    grant(&env, "cm-reader", "cm-reader", config_map_reader()).await;
    let rules_review = |namespace: &str| {
        post(
            &robot.client,
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                   "spec": {"namespace": namespace}}),
        )
    };
    let granted = json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]});
    let has_grant = |answer: &Raw| {
        answer.body["status"]["resourceRules"]
            .as_array()
            .is_some_and(|rules| rules.contains(&granted))
    };
    until_allowed("the rules review", || async {
        has_grant(&rules_review(ns).await)
    })
    .await;
    let here = rules_review(ns).await;
    assert_eq!(here.code, 201, "{}", here.text);
    assert_eq!(
        here.body["spec"],
        json!({}),
        "the answer does not repeat the question"
    );
    assert_eq!(here.body["status"]["incomplete"], false);
    // Everyone authenticated may ask these (system:basic-user) and read discovery.
    let resource_rules = here.body["status"]["resourceRules"]
        .as_array()
        .expect("rules");
    assert!(
        resource_rules.iter().any(|r| r["resources"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("selfsubjectaccessreviews")))),
        "{resource_rules:?}"
    );
    let non_resource = &here.body["status"]["nonResourceRules"];
    assert!(
        non_resource
            .as_array()
            .is_some_and(|rules| rules.iter().any(|r| r["nonResourceURLs"]
                .as_array()
                .is_some_and(|u| u.contains(&json!("/version"))))),
        "{non_resource}"
    );
    let elsewhere = rules_review("default").await;
    assert!(
        !has_grant(&elsewhere),
        "a Role's rules hold in its namespace only"
    );
    let no_namespace = rules_review("").await;
    assert_eq!(
        (no_namespace.code, no_namespace.body["message"].as_str()),
        (400, Some("no namespace on request"))
    );

    let whoami = post(
        &robot.client,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .await;
    assert_eq!(whoami.code, 201, "{}", whoami.text);
    let info = &whoami.body["status"]["userInfo"];
    assert_eq!(info["username"], robot.user);
    assert_eq!(info["uid"], robot.uid);
    assert_eq!(
        info["groups"],
        json!([
            "system:serviceaccounts",
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated"
        ])
    );
    let credential = info["extra"]["authentication.kubernetes.io/credential-id"][0]
        .as_str()
        .unwrap_or("");
    assert!(credential.starts_with("JTI="), "{info}");
}

async fn a_binding_to_a_missing_role_is_the_reason_of_a_refusal(env: Env) {
    let robot = Robot::new(&env).await;
    let ns = &env.ns;
    grant(&env, "reader", "nobody", config_map_reader()).await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps/x");
    let expected = forbidden(
        format!(
            "configmaps \"x\" is forbidden: User \"{}\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"{ns}\": rbac: RBAC: role.rbac.authorization.k8s.io \"nobody\" not found",
            robot.user
        ),
        json!({"name": "x", "kind": "configmaps"}),
    );
    // kube-apiserver names the missing role once its informer has the binding.
    until_allowed("the refusal naming the role", || async {
        robot.get(&path).await.body == expected
    })
    .await;
}
