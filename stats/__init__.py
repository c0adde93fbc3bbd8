"""Pure statistics over sufficient statistics (numpy/scipy/statsmodels, no Spark)."""
