"""The web app's settings (`rlkit serve`): where the run is, how it binds, and its limits."""

from __future__ import annotations

from pydantic import Field

from rlkit.config import StrictModel


class ServeConfig(StrictModel):
    run_dir: str | None = Field(None, description="the run directory whose label store and media to serve")
    database: str | None = Field(None, description="a SQLAlchemy URL; default: <run_dir>/labels.sqlite")
    host: str = Field("127.0.0.1", description="bind address; anything but loopback needs a token")
    port: int = Field(8765, ge=0, le=65535)
    token: str | None = Field(None, min_length=16, description="required as header, cookie or ?token=")
    allowed_hosts: tuple[str, ...] = Field(
        (), description="Host names accepted besides 127.0.0.1, localhost, [::1] and host (without a token)"
    )
    annotator_tokens: str | None = Field(
        None, description="file of 'annotator token' lines: a session as X then needs X's token"
    )
    issue_tokens: tuple[str, ...] = Field(
        (), description="annotator ids to issue tokens for (into annotator_tokens, default "
                        "<run_dir>/annotator_tokens.txt); ids already there keep theirs"
    )
    scale: str | None = Field(None, description="label scale to set (default: the store's, else five)")
    max_body_bytes: int = Field(64 * 1024, ge=1024, description="requests above this are refused")
    max_text_chars: int = Field(4000, ge=1, description="longest M3HF feedback text accepted")
    lease_s: float = Field(300.0, ge=0, description="how long a shown pair is held for its annotator")
