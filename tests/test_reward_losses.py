"""Preference losses and metrics: hand-computed values, gradients, optima, numerical stability."""

import math

import numpy as np
import pytest
import torch

from rlkit.errors import InvalidLabelError
from rlkit.reward import (
    bradley_terry,
    hinge,
    make_loss,
    oracle_cross_entropy,
    ordinal_cross_entropy,
    pearson,
    preference_accuracy,
    rao_kupper_ties,
    tie_aware_accuracy,
)


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def tensor(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


# -- losses ----------------------------------------------------------------------------------


def test_ordinal_cross_entropy_matches_the_formula() -> None:
    delta, z = tensor(0.0, math.log(3), -2.0), tensor(0.5, 1.0, 0.25)
    expected = np.mean([
        math.log(2),  # a tie at delta 0
        -math.log(0.75),  # sigmoid(ln 3) = 3/4
        -0.25 * math.log(sigmoid(-2)) - 0.75 * math.log(sigmoid(2)),
    ])
    assert ordinal_cross_entropy(delta, z).item() == pytest.approx(expected, rel=1e-12)


def test_ordinal_cross_entropy_gradient_is_prediction_minus_label() -> None:
    delta = tensor(-1.0, 0.0, 2.0).requires_grad_()
    z = tensor(0.0, 0.8, 0.5)
    ordinal_cross_entropy(delta, z).backward()
    expected = [(sigmoid(d) - label) / 3 for d, label in [(-1, 0), (0, 0.8), (2, 0.5)]]
    np.testing.assert_allclose(delta.grad.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("loss", [ordinal_cross_entropy, rao_kupper_ties(2.0)],
                         ids=["ordinal", "rao_kupper"])
def test_all_tie_labels_are_best_explained_by_equal_returns(loss) -> None:
    delta = tensor(3.0, -2.0)
    for _ in range(100):  # plain gradient descent
        delta.requires_grad_()
        loss(delta, tensor(0.5, 0.5)).backward()
        delta = (delta - 4.0 * delta.grad).detach()
    np.testing.assert_allclose(delta.numpy(), 0.0, atol=1e-6)


def test_bradley_terry_is_ordinal_cross_entropy_on_binary_labels() -> None:
    delta, z = tensor(1.5, -0.3, 4.0), tensor(1.0, 0.0, 0.0)
    assert bradley_terry(delta, z).item() == ordinal_cross_entropy(delta, z).item()


def test_bradley_terry_refuses_ties_instead_of_silently_becoming_another_model() -> None:
    with pytest.raises(InvalidLabelError, match=r"bradley_terry .* z=0.5"):
        bradley_terry(tensor(0.0, 1.0), tensor(1.0, 0.5))


def test_rao_kupper_outcome_probabilities_sum_to_one() -> None:
    loss = rao_kupper_ties(theta=2.0)
    for d in (-3.0, 0.0, 0.7):
        p = [math.exp(-loss(tensor(d), tensor(z)).item()) for z in (1.0, 0.5, 0.0)]
        assert sum(p) == pytest.approx(1.0, abs=1e-12)
    # theta = 2 at delta 0: each outcome has probability 1/3
    assert loss(tensor(0.0), tensor(0.5)).item() == pytest.approx(math.log(3))


def test_rao_kupper_checks_theta_and_label_levels() -> None:
    with pytest.raises(ValueError, match="theta > 1, got theta=1.0"):
        rao_kupper_ties(1.0)
    with pytest.raises(InvalidLabelError, match="z=0.3"):
        rao_kupper_ties(2.0)(tensor(0.0), tensor(0.3))


def test_hinge_matches_the_formula() -> None:
    loss = hinge(margin=2.0)
    delta, z = tensor(0.25, 0.25, 3.0), tensor(1.0, 0.0, 0.5)
    # relu(1 - 0.25), relu(1 + 0.25), 0.5 relu(1 - 3) + 0.5 relu(1 + 3)
    assert loss(delta, z).item() == pytest.approx((0.75 + 1.25 + 2.0) / 3)


@pytest.mark.parametrize("name", ["ordinal", "bt", "rao_kupper", "hinge"])
def test_every_loss_stays_finite_at_huge_return_gaps(name: str) -> None:
    loss = make_loss(name)
    z = tensor(1.0, 0.0, 1.0, 0.0)
    delta = tensor(100.0, 100.0, -100.0, -100.0).requires_grad_()
    value = loss(delta, z)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(delta.grad).all()
    if name in ("ordinal", "bt"):  # the two wrong-way pairs cost 100 each, the others ~0
        assert value.item() == pytest.approx(50.0, rel=1e-9)


def test_make_loss_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="'ordinal', 'bt', 'rao_kupper' or 'hinge', got 'mse'"):
        make_loss("mse")


# -- metrics ---------------------------------------------------------------------------------


def test_preference_accuracy_leaves_out_ties_and_skips() -> None:
    delta = np.array([1.0, -1.0, 2.0, 5.0, 0.0, 3.0])
    z = np.array([1.0, 1.0, 0.5, np.nan, 0.0, 0.8])
    # decided pairs: right, wrong, (tie out), (skip out), delta 0 = half, right
    assert preference_accuracy(delta, z) == pytest.approx(2.5 / 4)
    assert math.isnan(preference_accuracy(delta[:1], np.array([0.5])))


def test_tie_aware_accuracy_scores_three_classes() -> None:
    delta = np.array([0.2, 0.2, 3.0, -3.0, -0.5])
    z = np.array([0.5, 1.0, 1.0, 0.5, 0.0])
    # predicted: tie, tie, A, B, tie; true: tie, A, A, tie, B
    assert tie_aware_accuracy(delta, z, tie_margin=1.0) == pytest.approx(2 / 5)


def test_oracle_cross_entropy_bottoms_out_at_the_oracle_entropy() -> None:
    p = np.array([0.9, 0.3, np.nan])
    matched = np.log(p / (1 - p))  # sigmoid(delta) = p
    entropy = -np.mean([0.9 * math.log(0.9) + 0.1 * math.log(0.1),
                        0.3 * math.log(0.3) + 0.7 * math.log(0.7)])
    assert oracle_cross_entropy(matched, p) == pytest.approx(entropy)
    assert oracle_cross_entropy(matched + 0.5, p) > entropy
    assert math.isfinite(oracle_cross_entropy(np.array([1000.0, -1000.0]), np.array([1.0, 0.0])))


def test_pearson_is_scale_free_and_nan_for_constants() -> None:
    a = np.array([1.0, 2.0, 4.0])
    assert pearson(a, 3 * a + 1) == pytest.approx(1.0)
    assert pearson(a, -a) == pytest.approx(-1.0)
    assert math.isnan(pearson(a, np.ones(3)))
