"""The sandbox: parse, validate against the allow-list, interpret."""
