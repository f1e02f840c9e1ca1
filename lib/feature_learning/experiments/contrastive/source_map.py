"""The source map of the chapter "Contrastive learning between universality and label efficiency"."""

from __future__ import annotations

from feature_learning.experiments.contrastive.runs import EncodingSweep, Pretrained, RegularisationRow
from feature_learning.experiments.contrastive.sizes import ContrastiveSizes

# -- the source map ---------------------------------------------------------------------------------------------------
LINEAR_ANALOGUE = ("the source's own linear multi-task model (Sec. 7.2.2): representations learned by projected "
                   "gradient descent, L2-penalised logistic probes on $m$ labelled points")

# The image-scale empirical results whose statement is checked only in the source's linear model (the theorems'
# setting): a "verified" verdict on them says nothing about the image experiment itself.
LINEAR_ONLY = ("fig71", "fig73", "tables_f2_f3", "fig75", "sec733_mechanism", "table_f9", "table_f9_trend")


def linear_only(experiment: str) -> str:
    """The note's opening for an entry of ``LINEAR_ONLY``: what its verdict checks."""
    return (f"checked in the source's linear model (the theorems' setting) only, not in the {experiment} image "
            "experiment")


def source_map(size: ContrastiveSizes, pre: Pretrained, reg: list[RegularisationRow], enc: EncodingSweep
               ) -> list[dict]:
    """Every result of ch. 7 and App. F the chapter rests on, its status here and the claims that carry it
    (``ClaimLedger.source``)."""
    T = size.model.T
    a = LINEAR_ANALOGUE
    enc_radii, enc_spread = enc.radii, enc.spread
    private = [f"mixture_private_weight_P{t}" for t in range(1, T + 1)]
    cka = [f"cka_{pair.replace(' ', '_')}" for pair in pre.cka]
    reg20 = [r.T for r in reg if r.m == 20]
    theory_model = ("{}: no neural encoder is trained; in the source's own linear model this is a consequence "
                    "of {}, checked on learned representations")
    return [
        dict(id="thm71", where="Thm 7.1, App. F.1", claims=["thm71_identity"],
             what=r"With $\ell(t) = -t$ the contrastive loss is the PCA objective of the augmentation-smoothed "
                  "representation"),
        dict(id="f11_xor", where="App. F.1.1", claims=["xor_optimal"],
             what="A contrastive optimum can encode a feature without making it linearly usable (the XOR table)"),
        dict(id="thm72_1", where="Thm 7.2 (1)", claims=["mixture_spurious_weight"],
             what="The optimal representation does not depend on the spurious (augmentation-changed) features"),
        dict(id="thm72_2", where="Thm 7.2 (2)", claims=["thm72_every_feature_encoded"],
             what=r"For each invariant feature there is $B_i$ such that the optimal representation encodes $z_i$ "
                  r"once $B_r \ge B_i$",
             note=r"on a finite $Z$ (three binary features, tables in $\mathbb R^2$ on spheres of radius "
                  r"$B_r$): the theorem's own setting"),
        dict(id="thm72_2_order", where="Thm 7.2 (2), finite $Z$",
             what=r"$B_i$ decreases in $\Pr[z_{R \setminus i} = z^-_{R \setminus i}, z_i \ne z_i^-]$: more "
                  "spread-out features are encoded first",
             not_testable=f"no threshold to order: the optimal tables encode every feature at every radius from "
                          f"{min(enc_radii)} to {max(enc_radii)}, the least spread-out feature (spread "
                          f"{min(enc_spread):.3f}) included, so every $B_i$ is below {min(enc_radii)} "
                          "(thm72_every_feature_encoded); the proof's $B_i$ is a sufficient bound built in "
                          r"$k + |Z|$ dimensions, not the optimum's threshold"),
        dict(id="prop73", where="Prop. 7.3, Prop. F.8, Lemma F.3",
             what=r"On an even mixture of $T$ tasks the representation is "
                  r"$Q(\sqrt{\alpha} z_S + \sqrt{\beta} z_{\mathrm{rest}})$ with $\alpha = 1$, $\beta = 1/T$ "
                  r"($r = 2s$); the probe's risk bound scales as $1/\sqrt{m}$",
             claims=["allocation_alpha", "beta_one_over_T", "mixture_shared_weight", *private,
                     "drop_shrinks_with_m"]),
        dict(id="prop_f8_ratio", where="Prop. F.8, App. F.2.4",
             what=r"The universal representation's bound is worse than the specific one's by $O(\sqrt{T})$",
             claims=["bound_ratio", "f24_identity", "drop_grows_with_T"]),
        dict(id="prop74", where="Prop. 7.4",
             what="Pre-trained on task $t$ alone, the representation keeps exactly $R_t$; on another task only the "
                  "shared features remain",
             claims=["single_S_weight", "single_P1_weight", "single_other_weight", "average_rises_each_task_m200"]),
        dict(id="lemma_f5", where="Lemma F.5 (F.64-F.68)", claims=["min_norm_predictor"],
             what=r"The min-norm probe on the universal representation has "
                  r"$\lVert u \rVert^2 = v_1/\alpha + v_2/\beta$"),
        dict(id="lemma_f5_sqrt", where="Lemma F.5, proof",
             printed=r"$X_{t,j} = \alpha \sum z_j$, $K = \max(C_2 m \alpha_t \sigma_S^2, \dots)$",
             correct=r"$\sqrt{\alpha} \sum z_j$ (its stated variance $m \alpha$ is that of $\sqrt{\alpha} \sum z_j$), "
                  r"and $\alpha$ for $S$"),
        dict(id="prop_f8_dominance", where="Prop. F.8, proof",
             printed=r"$\alpha Z + (2 - \alpha) Z_1 / T$ at $\alpha = 1$ 'stochastically dominates' the other $\alpha$",
             correct=r"not pointwise (the $Z$ and $Z_1$ terms trade off for $T > 1$); the conclusion $\alpha = 1$ "
                     r"holds, "
                  "as the reduced problem solved numerically shows"),
        dict(id="prop_f9", where="Prop. F.9 (F.104-F.112)",
             what=r"Contrastive fine-tuning within $\lVert W - W^* \rVert_F \le \gamma$ raises the target's private "
                  r"weight to $\min(1, 1/\sqrt{T} + \gamma/\sqrt{s})$ and keeps the rest",
             claims=["f9_solution", "f9_private_weight", "f9_shared_kept", "f9_others_kept",
                     "finetune_reaches_specific"]),
        dict(id="fig71", where="Sec. 7.3.1, Fig. 7.1, Table 7.1 (LP row)", analogue=a,
             what="Adding pre-training sets lowers the target's linear-probe accuracy and raises the "
                              "average over tasks (MoCo v2, CINIC-10 + SVHN + GTSRB + ImageNet32)",
             claims=["target_falls", "average_rises", "table71_lp_falls"],
             note=theory_model.format(
                 linear_only("MoCo v2"), "Props. 7.3 and 7.4 (the private weight $1/T$)")),
        dict(id="fig71_nonlinear", where="Sec. 7.3.1, Fig. 7.1 (on a nonlinear encoder)",
             what="The trade-off with a nonlinear encoder trained by InfoNCE: the target's probe accuracy falls "
                  "and the average over tasks rises as pre-training sets are added",
             claims=["nonlinear_target_falls", "nonlinear_average_rises"],
             analogue=("the source notes' nonlinear prototype: inputs a fixed random tanh mixing of the linear "
                       r"model's $z$, an MLP encoder $64 \to 256 \to 16$ trained by InfoNCE, logistic probes")),
        dict(id="fig71_text", where="Sec. 7.3.1 text vs Table 7.1", claims=["fig71_text_vs_table71"],
             printed=r"CIFAR-10 LP accuracy $88.5 \to 76.4$",
             correct=r"Table 7.1 prints $88.41 \to 75.64$"),
        dict(id="fig73", where="Fig. 7.3, App. F.3.2, F.3.5", analogue=a, claims=["target_falls_each_target"],
             what="The trade-off for MoCo v2, NNCLR and SimSiam on three target tasks",
             note=linear_only("MoCo v2, NNCLR and SimSiam") + ": the three target tasks, each against its own "
                  "task-specific pre-training; one contrastive loss "
                  "(logistic, batch-mean negative) stands for the three methods, whose ResNet18 pre-training (800 "
                  "epochs on four image collections) needs the image data and GPU-days"),
        dict(id="fig74", where="Fig. 7.4", what="The trade-off on ImageNet subsets (MoCo v3, SimSiam)",
             not_attempted="ImageNet's 1,281,167 training images (the target, ImageNet-Bird, is 76k of them) cannot "
                           "be had here: this machine reaches package registries only, and no package ships them; "
                           "MoCo v3 (ViT-S) alone then costs about 5e16 FLOPs an epoch on them (4.6 GFLOPs a "
                           "224-pixel forward pass, two views, backward and momentum encoder), for each of four "
                           "pre-training sets. In the linear model its mechanism is Fig. 7.3's "
                           "(target_falls_each_target)"),
        dict(id="tables_f2_f3", where="Tables F.2, F.3", analogue=a,
             what="MoCo v3 LP accuracy on ImageNet-Bird / -Vehicle with 500 to 8k labels: the specific "
                  "pre-training's advantage shrinks with more labels",
             claims=["learned_drop_shrinks_with_m", "drop_shrinks_with_m"],
             note=theory_model.format(
                 linear_only("MoCo v3 ImageNet"), r"Prop. 7.3 (the probe's risk bound $\sim 1/\sqrt{m}$)")),
        dict(id="fig75", where="Sec. 7.3.2, Fig. 7.5", analogue=a,
             what="Linear CKA to the target-specific representation falls as pre-training sets are added; "
                  "representations from different tasks are dissimilar",
             claims=["cka_falls_with_tasks", *cka],
             note=theory_model.format(
                 linear_only("CKA"), "Prop. 7.3's weights and the CKA closed form derived from them")),
        dict(id="table72_ft_lp", where="Tables 7.1, 7.2", analogue=a,
             what="Fine-tuning beats linear probing on the universal representation",
             claims=[f"ft_beats_lp_T{t}" for t in reg20],
             note="no neural encoder is trained: supervised fine-tuning beating the probe is no proposition of the "
                  "source, measured in its own linear model"),
        dict(id="sec733_mechanism", where="Sec. 7.2.2, 7.3.3, Fig. F.8", analogue=a,
             what="Contrastive regularisation highlights the task-specific (private) features",
             claims=[f"ours_raises_private_T{t}" for t in reg20],
             note=theory_model.format(
                 linear_only("Fig. F.8"), "Prop. F.9 (the contrastive term raises the private weight)")),
        dict(id="table72_gain", where="Sec. 7.3.3, Tables 7.1, 7.2",
             what="Contrastive regularisation beats fine-tuning by 0.4 to 4.8 points (0.7 to 1 on CIFAR-10)",
             claims=[f"ours_beats_ft_T{t}" for t in reg20],
             note="tested in the source's own linear model, where fine-tuning already finds a near-optimal head; "
                  "the source's regime (deep encoders, real augmentations, fine-tuning far from optimal) is not "
                  "simulated"),
        dict(id="table_f9", where="Table F.9, App. F.3.4", analogue=a,
             what="Contrastive regularisation, then a linear probe, beats the probe on the pre-trained "
                  "representation", claims=["finetune_improves_probe"],
             note=theory_model.format(
                 linear_only("Table F.9"), "Prop. F.9")),
        dict(id="table_f9_trend", where="Table F.9",
             what="... and the gain grows as the pre-training data grow more diverse",
             claims=["f9_private_weight_trend", "finetune_gain_grows_with_T", "tablef9_gain_grows"],
             note=theory_model.format(
                 linear_only("Table F.9"), "Prop. F.9 at a radius that saturates the private weight for every $T$")),
        dict(id="foundation_models", where="Sec. 7.3.3, Table 7.2",
             what="CLIP (ViT-L), MoCo v3 (ViT-B) and SimCSE (BERT) with contrastive regularisation",
             not_attempted="the three pretrained models' weights (CLIP ViT-L/14 alone: 428 million parameters, "
                           "1.7 GB in float32) are served by model hubs at run time, which this machine cannot reach "
                           "(package registries only: the SimCSE and CLIP packages download their weights when "
                           "run), and so are Table 7.2's data (ImageNet's 1,281,167 images among them); Table 7.2 "
                           "is carried as data (table72_range)"),
    ]
