"""``brokerlb admin``: pulsar-admin's verbs and flags, against any broker (redirects followed).

::

    brokerlb admin [--admin-url http://127.0.0.1:8080] [--json | --table] GROUP VERB ...

Groups: ``namespaces`` (:mod:`.admin_namespaces`), ``topics`` (:mod:`.admin_topics`),
``brokers`` and ``broker-stats`` (:mod:`.admin_brokers`), ``tenants`` (:mod:`.admin_tenants`),
``clusters`` and ``ns-isolation-policy`` (:mod:`.admin_clusters`). Global options are
pulsar-admin's: ``--admin-url``, ``--auth-plugin``, ``--auth-params``, ``--tls-trust-cert-path``,
``--tls-allow-insecure``, ``--request-timeout``. Output: tables on a terminal, JSON otherwise
(:mod:`.admin_common`). ``docs/pulsar-admin.md`` lists every pulsar-admin verb of these groups
with brokerlb's status; a test runs each one against a standalone cluster.
"""

from __future__ import annotations

import typer

from brokerlb.admin.client import DEFAULT_URL
from brokerlb.cli.admin_brokers import broker_stats, brokers
from brokerlb.cli.admin_clusters import clusters, isolation
from brokerlb.cli.admin_namespaces import namespaces, story_row, story_table
from brokerlb.cli.admin_tenants import tenants
from brokerlb.cli.admin_topics import topics

__all__ = ["app", "story_row", "story_table"]

app = typer.Typer(no_args_is_help=True, help="pulsar-admin's verbs against a broker's REST API.")
app.add_typer(namespaces, name="namespaces")
app.add_typer(topics, name="topics")
app.add_typer(brokers, name="brokers")
app.add_typer(broker_stats, name="broker-stats")
app.add_typer(tenants, name="tenants")
app.add_typer(clusters, name="clusters")
app.add_typer(isolation, name="ns-isolation-policy")


@app.callback()
def _options(
    ctx: typer.Context,
    url: str = typer.Option(
        DEFAULT_URL, "--admin-url", "--url", "-u", envvar="BROKERLB_URL", help="any broker's web URL"
    ),
    as_json: bool = typer.Option(False, "--json", help="JSON output, even on a terminal"),
    as_table: bool = typer.Option(False, "--table", help="tables, even when not on a terminal"),
    auth_plugin: str | None = typer.Option(
        None,
        "--auth-plugin",
        envvar="BROKERLB_AUTH_PLUGIN",
        help="org.apache.pulsar.client.impl.auth.AuthenticationToken",
    ),
    auth_params: str | None = typer.Option(
        None,
        "--auth-params",
        envvar="BROKERLB_AUTH_PARAMS",
        help='token:<token>, file:///path/to/token or {"token": ...}',
    ),
    tls_trust_certs_file_path: str | None = typer.Option(
        None, "--tls-trust-cert-path", help="CA certificates (PEM) for https:// brokers"
    ),
    tls_allow_insecure: bool = typer.Option(
        False, "--tls-allow-insecure", help="accept any certificate of an https:// broker"
    ),
    request_timeout: float = typer.Option(30.0, "--request-timeout", help="seconds per request"),
) -> None:
    if as_json and as_table:
        raise typer.BadParameter("give at most one of --json and --table")
    verify: str | bool = tls_trust_certs_file_path or True
    if tls_allow_insecure:
        verify = False
    ctx.obj = {
        "url": url,
        "output": "json" if as_json else "table" if as_table else None,
        "auth": (auth_plugin, auth_params),
        "verify": verify,
        "timeout": request_timeout,
    }
