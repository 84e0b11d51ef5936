//! A cron's schedule: a cron expression (five fields, minute first, or
//! six with seconds first) read in an IANA time zone, so that `0 9 * * *`
//! in `Europe/Paris` fires at nine in Paris on both sides of a daylight
//! saving change. Parsing and the next fire time are `croner`'s; the
//! zone database is `chrono-tz`'s.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// Why a schedule is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The expression does not parse.
    #[error("schedule '{expression}' is not a cron expression: {reason}")]
    Expression {
        /// The expression as given.
        expression: String,
        /// What the parser said.
        reason: String,
    },
    /// The time zone is not in the IANA database.
    #[error("timezone '{0}' is not an IANA time zone (such as 'Europe/Paris')")]
    TimeZone(String),
}

/// A parsed schedule in its time zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    zone: Tz,
}

impl Schedule {
    /// Parses `expression` in `timezone` (UTC when absent).
    pub fn parse(expression: &str, timezone: Option<&str>) -> Result<Self, ScheduleError> {
        let zone = match timezone {
            None => Tz::UTC,
            Some(name) => name
                .parse::<Tz>()
                .map_err(|_| ScheduleError::TimeZone(name.to_owned()))?,
        };
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .build()
            .parse(expression)
            .map_err(|e| ScheduleError::Expression {
                expression: expression.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Schedule { cron, zone })
    }

    /// The first fire time strictly after `after` (fire times are whole
    /// seconds); `None` when the expression never matches again.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // Whole seconds: a fire at 12:00:01 is after 12:00:00.5 too.
        let floor = after.duration_trunc(TimeDelta::seconds(1)).unwrap_or(after);
        let local = floor.with_timezone(&self.zone);
        self.cron
            .find_next_occurrence(&local, false)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// The first fire time strictly after `after` and not after `end`.
    pub fn next_until(
        &self,
        after: DateTime<Utc>,
        end: Option<DateTime<Utc>>,
    ) -> Option<DateTime<Utc>> {
        self.next_after(after)
            .filter(|next| end.is_none_or(|end| *next <= end))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    #[test]
    fn five_fields_fire_on_minutes_six_on_seconds() {
        let daily = Schedule::parse("0 9 * * *", None).unwrap();
        assert_eq!(
            daily.next_after(utc(2026, 3, 1, 9, 0, 0)),
            Some(utc(2026, 3, 2, 9, 0, 0))
        );
        let every_two = Schedule::parse("*/2 * * * * *", None).unwrap();
        let half = utc(2026, 3, 1, 9, 0, 0) + TimeDelta::milliseconds(500);
        assert_eq!(every_two.next_after(half), Some(utc(2026, 3, 1, 9, 0, 2)));
    }

    #[test]
    fn a_zone_keeps_local_time_across_daylight_saving() {
        let paris = Schedule::parse("0 9 * * *", Some("Europe/Paris")).unwrap();
        // Winter: UTC+1.
        assert_eq!(
            paris.next_after(utc(2026, 3, 27, 12, 0, 0)),
            Some(utc(2026, 3, 28, 8, 0, 0))
        );
        // Clocks go forward on 29 March 2026: from then on UTC+2.
        assert_eq!(
            paris.next_after(utc(2026, 3, 28, 12, 0, 0)),
            Some(utc(2026, 3, 29, 7, 0, 0))
        );
        // 02:30 does not exist in Paris on 29 March: that day's fire is
        // at most once, never twice.
        let gap = Schedule::parse("30 2 * * *", Some("Europe/Paris")).unwrap();
        let first = gap.next_after(utc(2026, 3, 28, 12, 0, 0)).unwrap();
        let second = gap.next_after(first).unwrap();
        assert!(second - first >= TimeDelta::hours(23), "{first} {second}");
    }

    #[test]
    fn an_end_time_stops_the_schedule() {
        let hourly = Schedule::parse("0 * * * *", None).unwrap();
        let end = Some(utc(2026, 1, 1, 10, 30, 0));
        assert_eq!(
            hourly.next_until(utc(2026, 1, 1, 9, 59, 0), end),
            Some(utc(2026, 1, 1, 10, 0, 0))
        );
        assert_eq!(hourly.next_until(utc(2026, 1, 1, 10, 0, 0), end), None);
    }

    #[test]
    fn bad_expressions_and_zones_are_refused() {
        assert!(matches!(
            Schedule::parse("every day", None),
            Err(ScheduleError::Expression { .. })
        ));
        assert!(matches!(
            Schedule::parse("61 * * * *", None),
            Err(ScheduleError::Expression { .. })
        ));
        assert_eq!(
            Schedule::parse("0 9 * * *", Some("Mars/Olympus")).unwrap_err(),
            ScheduleError::TimeZone("Mars/Olympus".into())
        );
    }
}
