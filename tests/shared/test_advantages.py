"""The distillation advantage of ``shared.advantages``: sign, masking, and its weighing with rewards."""

from __future__ import annotations

import math

import pytest

from shared.advantages import distillation_advantages, token_advantages


def test_advantage_is_teacher_minus_student_and_zero_where_not_sampled_or_missing() -> None:
    student = [-1.0, -0.5, None, -2.0, -0.1]
    teacher = [-0.5, -1.5, -0.3, None, math.nan]
    # Positive where the teacher likes the token more (push it up), negative where less.
    assert distillation_advantages(student, teacher, [1, 1, 1, 1, 1]) == [0.5, -1.0, 0.0, 0.0, 0.0]
    assert distillation_advantages(student, teacher, [0, 1, 1, 1, 1]) == [0.0, -1.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="aligned"):
        distillation_advantages([-1.0], [-1.0, -2.0])


def test_token_advantages_weigh_reward_and_distillation() -> None:
    assert token_advantages([1.0, 1.0, 0.0], [0.5, -0.5, 0.0], reward_weight=0.5, distill_weight=2.0) == [
        1.5, -0.5, 0.0]
    assert token_advantages([1.0, 0.0], None) == [1.0, 0.0]
    with pytest.raises(ValueError):
        token_advantages([1.0], [1.0, 2.0])
