"""Column names of the input (sufficient statistics) and output (results) tables.

docs/stats.md documents every column; keep the two in step.
"""

from __future__ import annotations

METRIC_KINDS = ("mean", "proportion", "ratio", "quantile")

#: a comparison is identified by these columns (plus the pair of arms)
GROUP_COLUMNS = ["experiment_id", "metric", "segment_type", "segment_value", "as_of_date"]

REQUIRED_COLUMNS = [
    "experiment_id",
    "metric",
    "metric_kind",
    "segment_type",
    "segment_value",
    "arm",
    "is_control",
    "as_of_date",
    "n_units",
]

#: numeric sufficient statistics; absent columns are read as all-null
SUM_COLUMNS = [
    "sum_y", "sum_y2", "sum_x", "sum_x2", "sum_xy",
    "sum_c", "sum_c2", "sum_yc", "sum_d", "sum_d2", "sum_cd", "sum_yd", "sum_xc", "sum_xd",
    "quantile_p", "quantile_value", "n_events",
    "sum_s", "sum_s2", "sum_n", "sum_n2", "sum_sn",
]  # fmt: skip

ARRAY_COLUMNS = ["grid_p", "grid_value"]

#: columns each metric kind needs (besides n_units)
NEEDED = {
    "mean": ["sum_y", "sum_y2"],
    "proportion": ["sum_y"],
    "ratio": ["sum_y", "sum_y2", "sum_x", "sum_x2", "sum_xy"],
    "quantile": [
        "quantile_p", "quantile_value", "n_events",
        "sum_s", "sum_s2", "sum_n", "sum_n2", "sum_sn",
    ],
}  # fmt: skip

#: CUPED covariate columns per kind (all present -> CUPED is applied)
COVARIATES = {
    "mean": ["sum_c", "sum_c2", "sum_yc"],
    "proportion": ["sum_c", "sum_c2", "sum_yc"],
    "ratio": [
        "sum_c",
        "sum_c2",
        "sum_d",
        "sum_d2",
        "sum_cd",
        "sum_yc",
        "sum_yd",
        "sum_xc",
        "sum_xd",
    ],
}

OUTPUT_COLUMNS = [
    "experiment_id", "metric", "metric_kind", "is_guardrail",
    "segment_type", "segment_value", "as_of_date", "quantile_p",
    "control_arm", "treatment_arm", "n_control", "n_treatment",
    "value_control", "value_treatment",
    "delta_abs", "se_abs", "ci_abs_lower", "ci_abs_upper",
    "delta_rel", "se_rel", "ci_rel_lower", "ci_rel_upper",
    "p_value", "p_value_adjusted", "family", "correction_method", "is_significant",
    "seq_ci_abs_lower", "seq_ci_abs_upper", "seq_ci_rel_lower", "seq_ci_rel_upper",
    "seq_p_value", "is_seq_significant",
    "srm_p_value", "srm_segment_p_value", "is_trustworthy", "flags",
    "method", "relative_method", "df", "cuped_theta", "cuped_variance_reduction",
    "mde_abs", "mde_rel", "alpha",
    "mde_relative", "mde_relative_planned", "target_relative_effect", "is_underpowered",
    "sequential_width_ratio",
    "se_control", "se_treatment", "effective_events",
    "sequential_tuning_n", "sequential_calibrated",
]  # fmt: skip
