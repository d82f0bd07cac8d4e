-- TelemetryDestination resources: kept as given (json, not jsonb: passthrough key order
-- and values stay exactly as applied), with a generation per resource and one for the
-- whole set, which exporters watch to recompose.
-- depends: 0008.nodes-launches

CREATE TABLE public.destinations (
    name       text PRIMARY KEY,
    document   json NOT NULL,
    generation bigint NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.destinations_state (
    id         integer PRIMARY KEY CHECK (id = 1),
    generation bigint NOT NULL
);
INSERT INTO public.destinations_state VALUES (1, 0);
