-- The gateway's TLS identity, shared by every ingest and control replica: the private CA
-- (collectors trust it) and the current server certificate. Private keys are stored
-- encrypted with TUNEPLANE_SECRET_ENC_KEY.
-- depends: 0005.reporting

CREATE TABLE public.gateway_identity (
    name            text PRIMARY KEY,
    ca_pem          text NOT NULL,
    ca_key_sealed   bytea NOT NULL,
    cert_pem        text NOT NULL,
    key_sealed      bytea NOT NULL,
    hostnames       text[] NOT NULL,
    not_after       timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    renewed_at      timestamptz NOT NULL DEFAULT now()
);
