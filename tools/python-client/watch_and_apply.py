"""What the official Kubernetes Python client does against an API server, checked end to end.

The client sends boolean query parameters as Python prints them (`watch=True`, `force=True`,
`allowWatchBookmarks=True`), which kube-apiserver reads as true. This script:

1. watches ConfigMaps with `watch.Watch().stream(...)` from a list's resourceVersion and expects to
   see the ConfigMap it creates afterwards;
2. server-side applies a ConfigMap as one manager, then applies the same field as another: without
   force that must be a conflict, with `force_conflicts=True` it must take the field over.

Usage: python watch_and_apply.py [--kubeconfig PATH]   (default: $KUBECONFIG, ~/.kube/config)
Exits 0 when everything holds, 1 with a message naming what did not.
"""

import argparse
import sys
import uuid

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

# How long the watch may take to show the created ConfigMap (the server ends it after this).
WATCH_TIMEOUT_SECONDS = 20


class Failure(Exception):
    pass


def check_watch(core: client.CoreV1Api, ns: str) -> None:
    listed = core.list_namespaced_config_map(ns)
    start = listed.metadata.resource_version
    core.create_namespaced_config_map(
        ns, {"metadata": {"name": "watched"}, "data": {"k": "v"}}
    )
    seen = []
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_config_map,
        ns,
        resource_version=start,
        allow_watch_bookmarks=True,
        timeout_seconds=WATCH_TIMEOUT_SECONDS,
    ):
        obj = event["object"]
        name = getattr(getattr(obj, "metadata", None), "name", None)
        seen.append((event.get("type"), name))
        if event.get("type") == "ADDED" and name == "watched":
            w.stop()
            return
    raise Failure(
        "watch.Watch().stream() ended without an ADDED event for ConfigMap 'watched' "
        f"(events seen: {seen}); the server may not read watch=True as a watch"
    )


def check_forced_apply(api_client: client.ApiClient, ns: str) -> None:
    dynamic = DynamicClient(api_client)
    configmaps = dynamic.resources.get(api_version="v1", kind="ConfigMap")

    def applied(value: str) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "applied", "namespace": ns},
            "data": {"owned": value},
        }

    configmaps.server_side_apply(
        body=applied("by-other"), namespace=ns, field_manager="other-manager"
    )
    try:
        configmaps.server_side_apply(
            body=applied("by-python"), namespace=ns, field_manager="python-client"
        )
        raise Failure("an apply over another manager's field without force succeeded; expected 409")
    except Exception as e:  # the dynamic client raises its own ApiException subclasses
        if isinstance(e, Failure):
            raise
        if getattr(e, "status", None) != 409:
            raise Failure(f"an apply without force failed with {e!r}; expected a 409 conflict")
    try:
        result = configmaps.server_side_apply(
            body=applied("by-python"),
            namespace=ns,
            field_manager="python-client",
            force_conflicts=True,
        )
    except Exception as e:
        raise Failure(f"an apply with force_conflicts=True (force=True) failed: {e}")
    if result.data["owned"] != "by-python":
        raise Failure(f"the forced apply answered data {result.data}; expected owned=by-python")
    managers = {f.manager for f in result.metadata.managedFields}
    if "python-client" not in managers:
        raise Failure(f"the forced apply left managers {managers}; expected python-client among them")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG)")
    args = parser.parse_args()
    config.load_kube_config(config_file=args.kubeconfig)
    api_client = client.ApiClient()
    core = client.CoreV1Api(api_client)
    ns = f"python-client-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        check_watch(core, ns)
        check_forced_apply(api_client, ns)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    except ApiException as e:
        print(f"FAIL: the server refused a request: {e.status} {e.reason}: {e.body}", file=sys.stderr)
        return 1
    finally:
        try:
            core.delete_namespace(ns)
        except ApiException:
            pass
    print("ok: the watch saw the created ConfigMap and force=True took over the applied field")
    return 0


if __name__ == "__main__":
    sys.exit(main())
