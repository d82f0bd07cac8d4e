"""Helpers the tests and benchmarks share, one concern per module:
``environment`` (paths, endpoints and ports of the real services the tests run against);
``processes`` (the project's processes started as users start them, logs kept);
``credentials`` (credentials for tests: workload and user tokens, the served certificate);
``calls`` (gRPC calls as clients make them: bearer metadata, a batch pushed to ingest);
``truth`` (what sources hold and batches carry, to compare what was stored against);
``readmodels`` (reading and waiting on the PostgreSQL read models);
``kafka`` (the batches topic as ingest fills it, and consumer groups placed at its end);
``control`` (node control test helpers: enrollment, nodes, a run with two members);
``web`` (clients of the web application);
``users`` (real, separate users for what training code can reach; root needed);
``schemaserver`` (an HTTP server counting fetches of a JSON Schema);
``oidc`` (the OpenID Connect provider scripts/oidc starts, and a browser's part in signing in);
``prometheus`` (a real Prometheus scraping the services a test started, PromQL polled).
"""
