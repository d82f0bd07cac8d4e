-- Projects and roles: every run belongs to a project, and a user holds a role per project
-- (viewer < editor < owner); admins (users.is_admin) hold every role everywhere. Runs
-- made before projects, and telemetry of runs with no runs row (tokens issued by hand),
-- belong to the project 'default', owned by the admins of the day. A disabled user's
-- tokens are refused from the moment it is disabled.
-- depends: 0010.export-epochs

CREATE TABLE public.projects (
    project    text PRIMARY KEY CHECK (project ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.project_roles (
    project  text NOT NULL REFERENCES public.projects (project) ON DELETE CASCADE,
    username text NOT NULL REFERENCES public.users (username) ON DELETE CASCADE,
    role     text NOT NULL CHECK (role IN ('viewer', 'editor', 'owner')),
    PRIMARY KEY (project, username)
);
CREATE INDEX project_roles_by_user ON public.project_roles (username);

INSERT INTO public.projects (project) VALUES ('default');
INSERT INTO public.project_roles (project, username, role)
    SELECT 'default', username, 'owner' FROM public.users WHERE is_admin;

ALTER TABLE public.runs
    ADD COLUMN project text NOT NULL DEFAULT 'default' REFERENCES public.projects (project);
CREATE INDEX runs_by_project ON public.runs (project, run_id);

ALTER TABLE public.users ADD COLUMN disabled_at timestamptz;

-- A node takes launches of the projects it names only; NULL: of every project.
ALTER TABLE public.nodes ADD COLUMN projects text[];

-- A download names its object: find the runs holding it without reading every record.
CREATE INDEX rich_records_by_object ON readmodel.rich_records (object_key);
