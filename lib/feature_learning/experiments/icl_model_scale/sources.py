"""The source map of the chapter "Model scale and in-context learning" (dissertation ch. 5)."""

# -- the source map (dissertation ch. 5, by its own section, theorem and figure numbers) -------------------------------
SOURCE_MAP = [
    dict(id="lemma_5_1", where="Lemma 5.1", what="Pretraining loss of the linear self-attention",
         claims=["lemma51_constant", "reduction_to_eigenbasis"]),
    dict(id="lemma_5_1_constant", where="Lemma 5.1; its citations in Thm 5.4.1 and App. D",
         printed="The lemma is cited as 'Theorem 5.1', and it takes the blocks $\\mathbf w^{PV}_{21}$, "
                 "$\\mathbf w^{KQ}_{21}$ to be zero without saying so",
         claims=[], correct=r"Lemma 5.1, with $\mathbf w^{PV}_{21} = \mathbf w^{KQ}_{21} = 0$ stated; its constant, "
                            r"said only to be independent of $\theta$ (true), is $C = \mathrm{tr}(\Lambda)/2$ "
                            "(derived in the chapter, lemma51_constant)"),
    dict(id="eq_5_2", where="Eq. (5.2)", printed="The LSA prediction is garbled",
         correct=r"$\hat y_q = ((\mathbf w^{PV}_{21})^\top\ w^{PV}_{22}) \frac{\mathbf E\mathbf E^\top}{\rho} "
                 r"\binom{\mathbf W^{KQ}_{11}}{(\mathbf w^{KQ}_{21})^\top} \mathbf x_q$", claims=[]),
    dict(id="rho_is_M", where="Thm 5.4.2 proof (App. D.2.2)",
         printed=r"The evaluation normaliser $\rho$ is left implicit; term (II)'s second line and Lemma D.2's "
                 r"$\Lambda\mathbf w^\top\mathbf w\Lambda$ are misprinted",
         correct=r"$\rho = M$; $\sum_i\epsilon_i\mathbf x_i^\top\mathbf U^*\mathbf x_q$; "
                 r"$\Lambda\mathbf w\mathbf w^\top\Lambda$ (the risk derived with $\rho = M$ matches Monte Carlo)",
         claims=["risk_formula_symbolic", "risk_formula_mc"]),
    dict(id="thm_5_4_3_proof", where="Thm 5.4.3 proof (App. D.2.2)", printed=r"$\mathbf D^2$",
         correct=r"$\mathbf D^3$ (harmless: the term is common to both ranks)", claims=["gap_formula_symbolic"]),
    dict(id="sec_5_5_notation", where="Sec. 5.5, App. D.3",
         printed=r"$v_1, v_2$ in the main text; $P_{\mathbf Z}$ with an inverse; the $p_{\mathcal T}$ condition "
                 r"without the $|S_1|$, $|S_2|$ normalisations",
         correct=r"$\nu_1, \nu_2$ of the appendix; a pseudo-inverse ($\mathbf D_j$ has $\pm$ duplicate columns); "
                 "the normalised condition", claims=[]),
    dict(id="sec_5_7_pretraining_noise", where="Sec. 5.7",
         printed=r"Pretraining noise 'is covered by $\xi$ in the linear regression case'",
         correct=r"$\xi$ is the task's weight outside the top $r$ directions: with $\xi = 0$ Thm 5.4.3's gap is "
                 r"positive (larger_rank_worse), so Sec. 5.7's 'no pretraining noise, no gap' fails under that "
                 r"reading; "
                 r"it holds when pretraining noise is the pretraining variance $\lambda_{r+1}, \dots, \lambda_{r'}$ of "
                 "the directions the larger model adds (gap_needs_pretraining_noise)",
         claims=["larger_rank_worse", "gap_needs_pretraining_noise"]),
    dict(id="thm_5_4_1", where="Thm 5.4.1, App. D.2.1",
         what=r"The optimal rank-$r$ attention keeps the top-$r$ eigen-directions, "
              r"$v_i^* = N/((N+1)\lambda_i + \mathrm{tr}\,\mathbf D)$",
         claims=["optimum_vstar", "top_r_directions", "trained_matches_optimum", "pretraining_loss_per_rank",
                 "sgd_lands_on_vstar", "sgd_loss_near_optimum", "sgd_full_matrix"],
         note="the source gives no training; by online SGD the diagonal and the loss meet the notes' tolerance at "
              "every profile, the whole matrix at low rank misses it at the ci and book budgets (sgd_full_matrix, "
              "declared to hold at the source's scale only: not reproduced below it)"),
    dict(id="thm_5_4_1_proof", where="Thm 5.4.1 proof (App. D.2.1)",
         printed=r"The proof asserts that $\mathbf V^*$ is diagonal and writes "
              r"$\mathbf U\mathbf Q^\top\mathbf U^*\mathbf Q$ for $u^*\mathbf Q^\top\mathbf U^*\mathbf Q$",
         claims=["optimum_vstar"],
         correct="diagonality needs Eckart-Young on the completed square (derived in the chapter)"),
    dict(id="thm_5_4_2", where="Thm 5.4.2", what="Evaluation risk of the rank-$r$ optimum under label noise",
         claims=["risk_formula_symbolic", "risk_formula_mc", "noise_slope_matches"]),
    dict(id="thm_5_4_2_large_N", where="Thm 5.4.2, Implications",
         what=r"For $N\lambda_r \gg \mathrm{tr}\,\mathbf D$ the risk is $\lVert\xi\rVert_{\mathbf D}^2 + "
              r"((r+1)\lVert\mathbf s\rVert_{\mathbf D}^2 + r\lVert\xi\rVert_{\mathbf D}^2 + r\sigma^2)/M$",
         claims=["large_N_limit"]),
    dict(id="thm_5_4_3", where="Thm 5.4.3", what=r"Larger rank, larger noise sensitivity: the gap "
              r"$(\lVert\mathbf s\rVert_{\mathbf D}^2 + \sigma^2)/M \sum(\lambda_i v_i^*)^2 \ge 0$",
         claims=["gap_formula_symbolic", "gap_matches_formula", "larger_rank_worse", "gap_grows_with_noise",
                 "noise_sensitivity_grows_with_rank"]),
    dict(id="thm_5_4_2_tradeoff", where="Thm 5.4.2, Implications (the trade-off)",
         what=r"A trade-off as the rank grows: the residual term $\lVert\xi\rVert_{\mathbf D}^2$ falls, the noise "
              r"terms $((r+1)\lVert\mathbf s\rVert_{\mathbf D}^2 + r\sigma^2)/M$ rise",
         claims=["tradeoff_flips_with_noise", "best_rank_risk_mc", "best_rank_mc_agrees", "best_rank_shrinks"]),
    dict(id="thm_5_5_1_constructions", where="Thm 5.5.1",
         what=r"$g_2^*$ has zero loss on $S_1$ and $S_2$, $g_1^*$ on $S_1$, under a condition on $p_{\mathcal T}$",
         claims=["g2_zero_loss_margin1", "g1_covers_S1", "g1_S2_coverage", "g2_min_norm_own_pattern",
                 "pT_condition"]),
    dict(id="thm_5_5_1_optimality", where="Thm 5.5.1, App. D.3",
         printed="$g_1^*$ and $g_2^*$ are the optimal (loss-minimising, then minimum-norm) models of their sizes",
         claims=["g1_is_loss_minimiser", "g2_is_min_norm"],
         correct="both refuted exactly: a rescaled $g_1^*$ halves the $S_2$ loss; a certified zero-loss model of "
                 "another "
              "activation pattern has a smaller norm than $g_2^*$"),
    dict(id="thm_5_5_2", where="Thm 5.5.2",
         what=r"The small model lets $(\nu_1+1)/(\nu_2+1)$ of the context noise through and is more robust at "
              "finite $M$",
         claims=["projection_ratio", "projection_energies", "small_more_robust_finite_M", "both_accurate_large_M",
                 "robustness_gap_M64"]),
    dict(id="fig_5_1_clean", where="Fig. 5.1, Sec. 5.6.1",
         what="With clean labels larger models are better in-context learners",
         claims=["tf_large_beats_prior", "tf_larger_more_accurate_clean"],
         analogue="tiny softmax transformers on a synthetic binary ICL task with a prior direction"),
    dict(id="fig_5_1_flips", where="Fig. 5.1, Sec. 5.6.1",
         what="As labels are flipped larger models degrade more and override their prior",
         claims=["tf_larger_more_flip_sensitive", "tf_large_overrides_prior"],
         analogue="tiny softmax transformers on a synthetic binary ICL task with a prior direction"),
    dict(id="fig_5_1_small", where="Fig. 5.1, Sec. 5.6.1",
         what="Small models stay flat and seldom fall below random guessing",
         claims=["tf_small_not_below_chance", "tf_small_stays_flat"],
         analogue="tiny softmax transformers on a synthetic binary ICL task with a prior direction"),
    dict(id="fig_5_2", where="Fig. 5.2, Sec. 5.6.1",
         what="Base (not instruction-tuned) models show a similar or stronger effect; instruction tuning impairs ICL",
         not_testable="it needs pretrained base and instruction-tuned Llama 2 models (7b to 70b parameters: 13 to "
                      "140 GB of 16-bit weights, which nothing here downloads; pretraining the smallest took 184,320 "
                      "A100-hours, Touvron et al. 2023, Table 2), and the analogue has no instruction tuning to "
                      "compare"),
    dict(id="fig_5_3", where="Fig. 5.3, Sec. 5.6.2",
         what="Llama 2-13b attends mainly to the relevant sentence, 70b to the irrelevant one too",
         not_attempted="it reads the attention of Llama 2-13b and 70b (26 and 140 GB of 16-bit weights; 368,640 and "
                       "1,720,320 A100-hours to pretrain, Touvron et al. 2023, Table 2) on SST-2 prompts with a GSM-IC "
                       "sentence appended; nothing here downloads them, and the analogue's tokens have no irrelevant "
                       "sentence; the linear model's closed-form counterpart (score_closed_form, score_energy_mc) is "
                       "ours, not the source's"),
    dict(id="sec_5_7", where="Sec. 5.7",
         what="The robustness gap needs both pretraining noise and inference noise",
         claims=["gap_needs_inference_noise", "gap_needs_pretraining_noise", "larger_rank_worse"],
         note=r"in the linear model; pretraining noise read as the pretraining variance of the directions the larger "
              r"model adds, not as $\xi$ (see the erratum on Sec. 5.7 below)"),
]


def waiting_for_full(chapter, ledger) -> str:
    """The source results whose verdict waits for a run at the source's scale: graded, as ``chapter.close()`` grades
    them, with the stored ``full`` record and seed sweep; named by where they are in the source, with how many results
    each place holds ("Thm 5.4.1 (one result), Fig. 5.1 (three results)"), or "none"."""
    from feature_learning.book.claims import stored_sweep
    from feature_learning.book.provenance import sizes_digest

    full_sizes = (chapter.sizes_table or {}).get("full")
    ledger.attach_stored(full=chapter.stored_full_run(), sweep=stored_sweep(),
                         sizes_digest=sizes_digest(full_sizes) if full_sizes is not None else None)
    places: dict[str, int] = {}
    for entry in ledger.to_json()["sources"]:
        if "not run at the source's scale yet" in (entry.get("verdict") or ""):
            place = entry["where"].split(",")[0]
            places[place] = places.get(place, 0) + 1
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    return ", ".join(f"{place} ({words[k] if k < len(words) else k} result{'' if k == 1 else 's'})"
                     for place, k in places.items()) or "none"
