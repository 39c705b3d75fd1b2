//! Settings: the policy file (`--config FILE` or `$XDG_CONFIG_HOME/factory-mcp/config.toml`) merged with the command-line flags that mirror its keys.
