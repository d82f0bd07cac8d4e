"""What every service's Prometheus metrics share (prometheus-client): serving them on a port
of their own (``exposition``), gauges that mirror what changes under them (``gauges``: an
asyncpg pool read when scraped, a consumer's lag by partition), and a gRPC server
interceptor that times each call and says how it was answered (``calls``). The metrics
themselves are declared in each service's ``metrics`` module."""
