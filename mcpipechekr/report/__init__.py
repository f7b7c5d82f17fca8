"""Reports for people that read a project's runs: each module renders what the artifacts hold."""
