"""The dashboard page and its JSON twin."""

from __future__ import annotations

from dataclasses import asdict

from rlkit.extras import extra

with extra("human"):
    from fastapi import APIRouter, Request
    from fastapi.responses import HTMLResponse

from pydantic import BaseModel

from rlkit.human.dashboard import chart, dashboard_stats
from rlkit.human.deps import ERROR_RESPONSES, page

router = APIRouter(responses=ERROR_RESPONSES)


class AgreementOut(BaseModel):
    first: str
    second: str
    shared: int
    exact: float
    same_side: float


class DashboardOut(BaseModel):
    annotators: dict[str, dict[str, int]]
    scale_names: list[str]
    distribution: dict[str, list[int]]
    agreement: list[AgreementOut]
    krippendorff_alpha: float | None
    series: dict[str, list[tuple[int, float]]]


@router.get("/api/dashboard", response_model=DashboardOut)
def dashboard_data(request: Request) -> DashboardOut:
    stats = dashboard_stats(request.app.state.store)
    return DashboardOut(annotators=stats.annotators, scale_names=list(stats.scale.names),
                        distribution=stats.distribution,
                        agreement=[AgreementOut(**asdict(a)) for a in stats.agreement],
                        krippendorff_alpha=stats.alpha,
                        series=stats.series)


@router.get("/dashboard", response_class=HTMLResponse, include_in_schema=False)
def dashboard_page(request: Request) -> HTMLResponse:
    stats = dashboard_stats(request.app.state.store)
    charts = {name: (chart(points), points[-1]) for name, points in stats.series.items() if points}
    # pairs to label exist only where a trainer asked people about them (not in an M3HF run)
    pairs = request.app.state.store.n_queries() > 0
    return page(request, "dashboard.html", stats=stats, charts=charts, pairs=pairs)
