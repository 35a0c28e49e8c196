"""Settings: user, project and local files merged, each checked against one typed schema;
where ``--plugin-dir`` folders go."""
