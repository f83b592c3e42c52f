"""JitConfig: MindSpore's compile settings object (`mindspore.JitConfig`), taken by
`Cell.set_jit_config` and by `jit(jit_config=...)`.

Of its settings pijit reads `jit_level` ("O0" runs graphs as captured, without the
optimisations; "", "O1" and "O2" optimise fully). The others are checked and kept in
`jit_config_dict` as MindSpore keeps them: `exc_mode` and `infer_boost` choose Ascend execution
modes, `jit_syntax_level` MindSpore's graph syntax (pijit captures bytecode, so every syntax
level reads the same Python), `debug_level` how much MindSpore records while compiling
(`pijit.explain` and `PIJIT_LOG` give pijit's records).
"""

_CHOICES = {
    "jit_level": ("", "O0", "O1", "O2"),
    "exc_mode": ("auto", "sink", "no_sink"),
    "jit_syntax_level": ("", "STRICT", "COMPATIBLE", "LAX"),
    "debug_level": ("RELEASE", "DEBUG"),
    "infer_boost": ("", "on", "off"),
}


class JitConfig:
    """JitConfig(jit_level="", exc_mode="auto", jit_syntax_level="", debug_level="RELEASE",
    infer_boost="off", **kwargs): the settings, with any further keywords, in
    `jit_config_dict`."""

    def __init__(self, jit_level="", exc_mode="auto", jit_syntax_level="", debug_level="RELEASE",
                 infer_boost="off", **kwargs):
        given = {"jit_level": jit_level, "exc_mode": exc_mode,
                 "jit_syntax_level": jit_syntax_level, "debug_level": debug_level,
                 "infer_boost": infer_boost}
        for name, value in given.items():
            if value not in _CHOICES[name]:
                choices = [c for c in _CHOICES[name] if c]
                raise ValueError(f"JitConfig: {name} must be one of {choices}, got {value!r}")
        self.jit_config_dict = dict(kwargs, **given)

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self.jit_config_dict.items())
        return f"JitConfig({fields})"


def settings_of(jit_config):
    """The settings of a JitConfig (its jit_config_dict), or a dict of them itself; TypeError
    for anything else."""
    if isinstance(jit_config, JitConfig):
        return jit_config.jit_config_dict
    if not isinstance(jit_config, dict):
        raise TypeError(f"jit_config must be a JitConfig or a dict of its settings, got "
                        f"{type(jit_config).__name__}")
    return jit_config


def jit_level_of(jit_config):
    """The jit_level a JitConfig or a dict of its settings names ("" when none)."""
    return settings_of(jit_config).get("jit_level") or ""
