"""Stand-ins for outside services (model providers), run for real on 127.0.0.1 during tests."""
