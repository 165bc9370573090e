"""The ``rlkit`` subcommands' table and parsers: each command is a config schema, ``key=value``
overrides anywhere on its line, and the options every command shares.

Start-up stays cheap: a command's config schema is imported when its help is shown or it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

# command -> (its config schema as "module:Class", imported on use; one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("rlkit.factories.configs:DemoConfig",
             "collect, label (5-level teacher), train a reward, train an agent"),
    "collect": ("rlkit.factories.configs:CollectConfig", "roll out policies and save their trajectories"),
    "label": ("rlkit.factories.configs:LabelConfig", "label random segment pairs with a simulated teacher"),
    "train-reward": ("rlkit.factories.configs:TrainRewardConfig",
                     "fit a reward model to a preference dataset"),
    "eval-reward": ("rlkit.factories.configs:EvalRewardConfig", "measure a saved reward model on a dataset"),
    "pref-rl": ("rlkit.factories.configs:PrefRLConfig",
                "online preference-based RL with queries during training"),
    "demos": ("rlkit.apec.config:DemosCommandConfig",
              "train a demonstrator and save suboptimal demos at a return fraction"),
    "apec": ("rlkit.apec.config:ApecConfig",
             "APEC end to end: demos, AIL, checkpoint pairs, reward models, policies"),
    "serve": ("rlkit.human.settings:ServeConfig",
              "serve the labelling web app (label queue, M3HF feedback, dashboard)"),
    "m3hf": ("rlkit.m3hf.run_config:M3HFConfig",
             "M3HF: IPPO on Overcooked reshaped by free-text feedback each phase (resumable)"),
}


def command_schema(command: str) -> type[BaseModel]:
    """The config class of ``command`` (importing its module)."""
    module, _, name = COMMANDS[command][0].partition(":")
    return getattr(importlib.import_module(module), name)


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: positionals (the ``key=value`` overrides) and options in any order,
    an argument it does not know is its own usage error (``usage: rlkit label ...``), and its
    config's fields join the description when help is shown."""

    def __init__(self, *args: Any, command: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._command = command
        self._intermixing = False

    def parse_known_args(  # type: ignore[override]  # one signature for typeshed's three overloads
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._intermixing:  # the two passes of parse_known_intermixed_args
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            parsed, extras = self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, []

    def format_help(self) -> str:
        if self._command is not None:
            from rlkit.runners.help import fields_help

            self.description = f"{self.description}\n\n{fields_help(command_schema(self._command))}"
            self._command = None
        return super().format_help()


def positive_int(text: str) -> int:
    """An argparse ``type``: an integer >= 1 (argparse words the refusal with the option's name)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_command(subparsers: Any, name: str) -> argparse.ArgumentParser:
    """The parser of the command ``name`` (of ``COMMANDS``) with the arguments every command takes.

    Args:
        subparsers: the ``rlkit`` parser's subparsers action (its parser class ``CommandParser``).
        name: the command.

    Returns:
        The command's parser, to add its own options to.
    """
    summary = COMMANDS[name][1]
    command = subparsers.add_parser(name, help=summary, description=f"{summary}.", command=name,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    command.add_argument("overrides", nargs="*", metavar="key=value",
                         help="config overrides, dotted for nested fields (trainer.lr=3e-4), "
                              "anywhere on the line")
    command.add_argument("--config", type=Path, help="a YAML file of this command's config")
    command.add_argument("--run-dir", help="where outputs go (default: runs/<command>-<time>)")
    if name != "serve":
        command.add_argument("--overwrite", action="store_true",
                             help="run into a --run-dir that holds an earlier run, deleting its "
                                  "contents first (without it that is refused, unless this "
                                  "command resumes the run there: pref-rl, m3hf, apec, demos)")
    command.add_argument("--logger", default="jsonl,console,wandb",
                         help="comma-separated backends: jsonl, console, wandb, tensorboard")
    command.add_argument("--group", default=os.environ.get("WANDB_RUN_GROUP"),
                         help="the W&B group of this run (a sweep sets it to the sweep's name; "
                              "default $WANDB_RUN_GROUP); its job type is the command")
    command.add_argument("--torch-threads", type=positive_int, default=1,
                         help="torch CPU threads, >= 1 (default 1: small nets run fastest on one, "
                              "and more threads thrash when other processes share the cores)")
    command.add_argument("--print-config", action="store_true",
                         help="print the resolved config as YAML and exit")
    if name == "label":
        command.add_argument("--human", action="store_true",
                             help="label the pairs yourself in this terminal (rich prompts, same "
                                  "store and keys as `rlkit serve`)")
    return command
