"""Typed configs from YAML with key=value overrides."""

import pytest
import yaml
from pydantic import BaseModel

from rlkit.cli import RUNNERS, command_schema
from rlkit.config import ConfigError, load_config, save_config
from rlkit.factories.configs import DemoConfig, PrefRLConfig


def test_yaml_and_overrides_merge_with_types(tmp_path):
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump({"env": {"id": "MountainCarContinuous-v0"},
                                    "query": {"initial_pairs": 50}}))
    config = load_config(DemoConfig, path, ["teacher.beta=0.5", "agent.kwargs={n_steps: 64}",
                                            "model.hidden=[32, 32]"])
    assert config.env.id == "MountainCarContinuous-v0"
    assert config.query.initial_pairs == 50 and config.teacher.beta == 0.5
    assert config.agent.kwargs == {"n_steps": 64}
    assert config.model.hidden == (32, 32)
    save_config(config, tmp_path / "resolved.yaml")
    assert load_config(DemoConfig, tmp_path / "resolved.yaml") == config


def test_errors_name_the_field():
    out_of_range = r"DemoConfig.query.initial_pairs is out of range: 0 \(must be >= 1\)"
    with pytest.raises(ConfigError, match=f"^{out_of_range}$"):
        load_config(DemoConfig, None, ["query.initial_pairs=0"])
    unknown = "DemoConfig.query.initial_pair is not a field of DemoConfig.query"
    with pytest.raises(ConfigError, match=f"^{unknown}$"):
        load_config(DemoConfig, None, ["query.initial_pair=10"])
    with pytest.raises(ConfigError, match=f"^{out_of_range}; DemoConfig.seed is invalid: 'x' "):
        load_config(DemoConfig, None, ["seed=x", "query.initial_pairs=0"])  # every problem, each by its path
    with pytest.raises(ConfigError, match="query.selector"):
        load_config(PrefRLConfig, None, ["query.selector=best"])
    with pytest.raises(ConfigError, match="not of the form key=value"):
        load_config(DemoConfig, None, ["query.initial_pairs"])


def test_bad_config_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(DemoConfig, tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("env: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(DemoConfig, broken)
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(DemoConfig, listing)


def test_a_nested_override_keeps_the_commands_other_defaults():
    # PrefRLConfig's model defaults to an ensemble of 3, unlike a bare RewardModelConfig
    config = load_config(PrefRLConfig, None, ["model.hidden=[32]"])
    assert config.model.hidden == (32,) and config.model.ensemble_size == 3


def test_free_form_kwargs_are_replaced_whole_by_a_file_but_a_dotted_key_edits_one(tmp_path):
    path = tmp_path / "demo.yaml"
    path.write_text("agent:\n  kwargs: {n_steps: 64, batch_size: 32}\n")
    assert load_config(DemoConfig, path).agent.kwargs == {"n_steps": 64, "batch_size": 32}
    assert load_config(DemoConfig, path, ["agent.kwargs={n_steps: 8}"]).agent.kwargs == {"n_steps": 8}
    edited = load_config(DemoConfig, path, ["agent.kwargs.n_steps=128"]).agent.kwargs
    assert edited == {"n_steps": 128, "batch_size": 32}


def fields_off_their_default(config: BaseModel, prefix: str = "") -> list[tuple[str, object]]:
    """Every field of the config's sections whose value there differs from its field default:
    (dotted key, the field default)."""
    found = []
    for name in type(config).model_fields:
        value = getattr(config, name)
        if isinstance(value, BaseModel):
            fields = type(value).model_fields.items()
            found += [(f"{prefix}{name}.{field}", info.default) for field, info in fields
                      if not info.is_required() and not isinstance(getattr(value, field), BaseModel)
                      and getattr(value, field) != info.default]
            found += fields_off_their_default(value, f"{prefix}{name}.")
    return found


@pytest.mark.parametrize("command", sorted(RUNNERS))
def test_a_field_set_to_its_field_default_loads_back_as_set(command, tmp_path):
    """A saved config holds every field: one set to its field default, where the command's section
    default differs (pref-rl's trainer: ``refit: steps``, the field: ``epochs``), loads back as set."""
    schema = command_schema(command)
    keys = fields_off_their_default(schema())
    assert keys or command not in ("apec", "pref-rl")
    for key, default in keys:
        try:
            config = load_config(schema, None, [f"{key}={yaml.safe_dump(default).splitlines()[0]}"])
        except ConfigError:  # not a valid change on its own (ail.discriminator.state_only with r(s'))
            continue
        save_config(config, tmp_path / "config.yaml")
        assert load_config(schema, tmp_path / "config.yaml") == config, key


def test_pref_rl_writes_every_field_of_its_config(tmp_path):
    config = load_config(PrefRLConfig, None, ["trainer.refit=epochs"])
    assert PrefRLConfig().trainer.refit == "steps" and config.trainer.refit == "epochs"
    path = tmp_path / "config.yaml"
    save_config(config, path)
    saved = yaml.safe_load(path.read_text())
    assert saved["trainer"]["refit"] == "epochs"
    assert saved["query"]["unsupervised_steps"] == 0
    assert set(saved["trainer"]) == set(type(config.trainer).model_fields)
