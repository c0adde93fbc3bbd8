"""Sample-ratio-mismatch gate over the input table (pandas edge around :mod:`stats.srm`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stats.settings import AnalysisSettings
from stats.srm import srm_p_value

_SEG = ["experiment_id", "segment_type", "segment_value", "as_of_date"]


def arm_counts(df: pd.DataFrame, settings: AnalysisSettings) -> pd.DataFrame:
    """Units per arm per experiment x segment x date (index), arms as columns.

    The assignment count of an arm is the ``n_units`` of ``settings.srm_metric`` if set,
    else the largest ``n_units`` over the arm's metric rows (units with any exposure).
    """
    ok = df["arm"].notna() & (df["n_units"] >= 0) & df["as_of_date"].notna()
    ok &= df[["experiment_id", "segment_type", "segment_value"]].notna().all(axis=1)
    if settings.srm_metric is not None:
        ok &= df["metric"] == settings.srm_metric
    return df[ok].groupby([*_SEG, "arm"])["n_units"].max().unstack("arm")


def srm_by_segment(df: pd.DataFrame, settings: AnalysisSettings) -> pd.Series:
    """SRM p-value per experiment x segment x date."""
    counts = arm_counts(df, settings)
    if counts.empty:
        return pd.Series(dtype=float)
    weights = np.full(counts.shape, 1.0)
    experiments = counts.index.get_level_values("experiment_id").to_numpy()
    for exp, split in settings.expected_split.items():
        rows = experiments == exp
        weights[rows] = [split.get(str(arm), np.nan) for arm in counts.columns]
    weights = np.where(counts.notna().to_numpy(), weights, np.nan)
    return pd.Series(
        srm_p_value(counts.to_numpy(float), weights, settings.srm_continuity_correction),
        index=counts.index,
    )


def srm_columns(df: pd.DataFrame, pairs: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """Per-comparison SRM columns, aligned with ``pairs``' index.

    ``srm_p_value`` is the experiment's overall-segment test on that date; an overall
    failure marks every row of the experiment (that date) untrustworthy. A segment's own
    failure marks the segment (or, with ``srm_segment_scope="experiment"``, the experiment).
    """
    p_seg = srm_by_segment(df, s)
    key = pd.MultiIndex.from_frame(pairs[_SEG])
    seg_p = p_seg.reindex(key).to_numpy(float) if len(p_seg) else np.full(len(pairs), np.nan)
    overall = (
        p_seg[p_seg.index.get_level_values("segment_type") == "overall"] if len(p_seg) else p_seg
    )
    if len(overall):
        overall = overall.groupby(level=["experiment_id", "as_of_date"]).min()
        ov_key = pd.MultiIndex.from_frame(pairs[["experiment_id", "as_of_date"]])
        ov_p = overall.reindex(ov_key).to_numpy(float)
    else:
        ov_p = np.full(len(pairs), np.nan)
    srm = ov_p < s.srm_alpha
    srm_segment = seg_p < s.srm_alpha
    untrusted = srm | srm_segment
    if s.srm_segment_scope == "experiment" and len(p_seg):
        any_fail = (p_seg < s.srm_alpha).groupby(level=["experiment_id", "as_of_date"]).any()
        ov_key = pd.MultiIndex.from_frame(pairs[["experiment_id", "as_of_date"]])
        untrusted |= any_fail.reindex(ov_key).fillna(False).to_numpy(bool)
    return pd.DataFrame(
        {"srm_p_value": ov_p, "srm_segment_p_value": seg_p, "_srm": srm,
         "_srm_segment": srm_segment, "_untrusted": untrusted},
        index=pairs.index,
    )  # fmt: skip
