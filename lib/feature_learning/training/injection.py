"""Teacher-student training on real plus injected inputs: Algorithm 1 / Appendix E.5 of Shi, Wei and Liang (2022).

1. A teacher FC(m_t) is trained on the labelled real inputs L with the regulariser R1 + R2 (eqs. (291)-(293)) on
   the injected inputs U, so that its labels on U are balanced and confident.
2. The teacher relabels L and U.
3. Students FC(m_s) are trained on (i) a mixture with a fraction ``alpha`` of injected inputs and (ii) real inputs
   only, with the same number of samples; their test accuracy against the teacher's labels is tracked separately
   on fresh real and fresh injected inputs.

Deviation: the source chooses the teacher's size by the U-shaped part of a double-descent curve; here it is given.
"""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.models.fc_quadratic import balance_and_confidence, fc_quadratic, init_fc
from feature_learning.training.loop import OptimConfig, train


@dataclasses.dataclass(frozen=True)
class InjectionConfig:
    teacher_width: int
    student_width: int
    alpha: float  # fraction of injected inputs in the student's training set
    n_student: int  # student training-set size (both students)
    teacher_steps: int
    student_steps: int
    lr: float = 1e-2
    reg: float = 1.0  # weight of R1 + R2 on the injected inputs while training the teacher
    log_every: int = 25


def _ce(logits, labels):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def run_injection(x_train, y_train, x_test, u_train, u_test, config: InjectionConfig,
                  generator: torch.Generator) -> dict:
    """The protocol above; returns the teacher's accuracy and the students' test accuracies over training:
    ``real_acc`` and ``injected_acc`` of shape (steps, 2) with students (mixture, real only)."""
    d, classes = x_train.shape[1], int(y_train.max()) + 1
    teacher = init_fc(1, d, config.teacher_width, classes, generator, x_train.dtype)
    for t in teacher.tensors():
        t.requires_grad_(True)

    def teacher_loss(step):
        r1, r2 = balance_and_confidence(fc_quadratic(teacher, u_train))
        return _ce(fc_quadratic(teacher, x_train)[0], y_train) + config.reg * (r1 + r2).sum()

    train(teacher.tensors(), teacher_loss,
          OptimConfig(steps=config.teacher_steps, lr=config.lr, optimizer="adamw", warmup=1))
    with torch.no_grad():
        def label(x):
            return fc_quadratic(teacher, x)[0].argmax(-1)

        y_real_train, y_real_test = label(x_train), label(x_test)
        y_inj_train, y_inj_test = label(u_train), label(u_test)
    n = config.n_student
    n_inj = int(round(config.alpha * n))
    pick_real = torch.randperm(x_train.shape[0], generator=generator)
    pick_inj = torch.randperm(u_train.shape[0], generator=generator)[:n_inj]
    mix_x = torch.cat([x_train[pick_real[: n - n_inj]], u_train[pick_inj]])
    mix_y = torch.cat([y_real_train[pick_real[: n - n_inj]], y_inj_train[pick_inj]])
    real_x, real_y = x_train[pick_real[:n]], y_real_train[pick_real[:n]]
    xs, ys = torch.stack([mix_x, real_x]), torch.stack([mix_y, real_y])
    student = init_fc(2, d, config.student_width, classes, generator, x_train.dtype)
    for t in student.tensors():
        t.requires_grad_(True)

    def student_loss(step):
        logits = fc_quadratic(student, xs)
        return sum(_ce(logits[r], ys[r]) for r in range(2))

    def accs(step):
        with torch.no_grad():
            real = (fc_quadratic(student, x_test).argmax(-1) == y_real_test).double().mean(-1)
            inj = (fc_quadratic(student, u_test).argmax(-1) == y_inj_test).double().mean(-1)
        return {"real_acc": real, "injected_acc": inj}

    history = train(student.tensors(), student_loss,
                    OptimConfig(steps=config.student_steps, lr=config.lr, optimizer="adamw", warmup=1),
                    log_every=config.log_every, log_fn=accs)
    with torch.no_grad():
        teacher_acc = (label(x_test) == y_real_test).double().mean()  # 1 by construction; kept for symmetry
        teacher_true = {"inj_label_balance": torch.bincount(y_inj_test, minlength=classes).double() / len(u_test)}
    return {**history, "teacher_agreement": teacher_acc, **teacher_true,
            "labels": {"real_test": y_real_test, "inj_test": y_inj_test}}
