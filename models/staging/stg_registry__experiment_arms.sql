with source as (
    select * from {{ source('bronze', 'experiment_arms') }}
),

renamed as (
    select
        experiment_id,
        arm,
        title,
        cast(share as double) as share,
        is_control,
        start_date,
        end_date
    from source
)

select * from renamed
