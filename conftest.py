"""The suite's pytest plugin is `properties.run.plugin`: an installed package loads it through its
`pytest11` entry point (named after the module, so this line loads it once either way); a source
tree run without installing loads it here."""

pytest_plugins = ["properties.run.plugin"]
