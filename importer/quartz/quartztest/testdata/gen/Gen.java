// Gen lets the real Quartz 2.3.2 (its JDBCJobStore, JobStoreTX) schedule a representative set
// of jobs, triggers and calendars into a database, then writes what Quartz stored as SQL
// (blobs hex-encoded) and, for every trigger, the next fire times Quartz computes from that
// stored state. importer/quartz's tests load the SQL and compare their import with the
// answers, so they need no JVM. Run through gen.sh, which sets the JVM default zone to
// Europe/Paris (the zone of daily-interval triggers and of calendars without one).
//
//   java Gen DIALECT JDBC_URL USER PASSWORD OUT_DIR
import java.io.*;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.sql.*;
import java.time.*;
import java.util.*;
import java.util.Date;

import org.quartz.*;
import org.quartz.DateBuilder.IntervalUnit;
import org.quartz.core.QuartzScheduler;
import org.quartz.core.QuartzSchedulerResources;
import org.quartz.impl.StdSchedulerFactory;
import org.quartz.impl.StdScheduler;
import org.quartz.impl.calendar.*;
import org.quartz.impl.matchers.GroupMatcher;
import org.quartz.impl.triggers.SimpleTriggerImpl;
import org.quartz.spi.JobStore;
import org.quartz.spi.OperableTrigger;

import static org.quartz.JobBuilder.newJob;
import static org.quartz.TriggerBuilder.newTrigger;

public class Gen {
    public static class ReportJob implements Job {
        public void execute(JobExecutionContext ctx) {}
    }

    @DisallowConcurrentExecution
    @PersistJobDataAfterExecution
    public static class SerialJob implements Job {
        public void execute(JobExecutionContext ctx) {}
    }

    /** A calendar class of the application's own: not importable. */
    public static class OddDaysCalendar extends BaseCalendar {
        private static final long serialVersionUID = 1L;
        public boolean isTimeIncluded(long t) {
            return super.isTimeIncluded(t) && (t / 86400000L) % 2 == 0;
        }
    }

    /** A trigger with extra properties: Quartz stores it as a BLOB trigger. */
    public static class TaggedTrigger extends SimpleTriggerImpl {
        private static final long serialVersionUID = 1L;
        public String tag = "blue";
        @Override public boolean hasAdditionalProperties() { return true; }
    }

    static final ZoneId PARIS = ZoneId.of("Europe/Paris");
    static final TimeZone PARIS_TZ = TimeZone.getTimeZone("Europe/Paris");
    static final TimeZone NY_TZ = TimeZone.getTimeZone("America/New_York");
    static final int ANSWERS = 12;

    static Date paris(int y, int mo, int d, int h, int mi) {
        return Date.from(ZonedDateTime.of(y, mo, d, h, mi, 0, 0, PARIS).toInstant());
    }

    static Scheduler scheduler(String name, String prefix, boolean useProperties, String delegate,
                               String url, String user, String password) throws SchedulerException {
        Properties p = new Properties();
        p.setProperty("org.quartz.scheduler.instanceName", name);
        p.setProperty("org.quartz.scheduler.instanceId", "gen");
        p.setProperty("org.quartz.scheduler.skipUpdateCheck", "true");
        p.setProperty("org.quartz.threadPool.class", "org.quartz.simpl.SimpleThreadPool");
        p.setProperty("org.quartz.threadPool.threadCount", "1");
        p.setProperty("org.quartz.jobStore.class", "org.quartz.impl.jdbcjobstore.JobStoreTX");
        p.setProperty("org.quartz.jobStore.driverDelegateClass", delegate);
        p.setProperty("org.quartz.jobStore.useProperties", Boolean.toString(useProperties));
        p.setProperty("org.quartz.jobStore.tablePrefix", prefix);
        p.setProperty("org.quartz.jobStore.dataSource", "ds");
        p.setProperty("org.quartz.dataSource.ds.provider", "hikaricp");
        p.setProperty("org.quartz.dataSource.ds.URL", url);
        p.setProperty("org.quartz.dataSource.ds.user", user);
        p.setProperty("org.quartz.dataSource.ds.password", password);
        p.setProperty("org.quartz.dataSource.ds.maxConnections", "2");
        p.setProperty("org.quartz.dataSource.ds.driver",
            url.startsWith("jdbc:postgresql") ? "org.postgresql.Driver" : "org.mariadb.jdbc.Driver");
        StdSchedulerFactory f = new StdSchedulerFactory();
        f.initialize(p);
        return f.getScheduler(); // never started: nothing fires, the store keeps what we set
    }

    static JobStore jobStore(Scheduler s) throws Exception {
        Field f = StdScheduler.class.getDeclaredField("sched");
        f.setAccessible(true);
        QuartzScheduler qs = (QuartzScheduler) f.get(s);
        Field r = QuartzScheduler.class.getDeclaredField("resources");
        r.setAccessible(true);
        return ((QuartzSchedulerResources) r.get(qs)).getJobStore();
    }

    /** Fires the trigger n times the way the job store does (triggered(cal), then a replacing store). */
    static void advance(Scheduler s, TriggerKey key, int n) throws Exception {
        OperableTrigger t = (OperableTrigger) s.getTrigger(key);
        org.quartz.Calendar cal = t.getCalendarName() == null ? null : s.getCalendar(t.getCalendarName());
        for (int i = 0; i < n; i++) t.triggered(cal);
        jobStore(s).storeTrigger(t, true);
    }

    static void populateMain(Scheduler s) throws Exception {
        // Calendars: every class of Quartz 2.3.2, some with a zone and some without (JVM default).
        HolidayCalendar holidays = new HolidayCalendar();
        holidays.setTimeZone(PARIS_TZ);
        holidays.setDescription("French bank holidays");
        holidays.addExcludedDate(paris(2027, 1, 1, 0, 0));
        holidays.addExcludedDate(paris(2027, 1, 6, 12, 0)); // normalised to the start of the day
        holidays.addExcludedDate(paris(2027, 4, 5, 0, 0));
        s.addCalendar("holidays", holidays, false, false);

        WeeklyCalendar weekends = new WeeklyCalendar(); // Saturday and Sunday; no zone
        s.addCalendar("weekends", weekends, false, false);

        WeeklyCalendar midweek = new WeeklyCalendar(PARIS_TZ);
        midweek.setDayExcluded(java.util.Calendar.SATURDAY, false);
        midweek.setDayExcluded(java.util.Calendar.SUNDAY, false);
        midweek.setDayExcluded(java.util.Calendar.WEDNESDAY, true);
        s.addCalendar("no-wednesday", midweek, false, false);

        MonthlyCalendar monthly = new MonthlyCalendar(PARIS_TZ);
        monthly.setDayExcluded(1, true);
        monthly.setDayExcluded(15, true);
        monthly.setDayExcluded(31, true);
        s.addCalendar("month-ends", monthly, false, false);

        AnnualCalendar annual = new AnnualCalendar(PARIS_TZ);
        for (int[] md : new int[][] {{12, 25}, {1, 1}, {5, 1}, {1, 8}}) {
            java.util.Calendar c = java.util.Calendar.getInstance(PARIS_TZ);
            c.set(2027, md[0] - 1, md[1], 0, 0, 0);
            annual.setDayExcluded(c, true);
        }
        s.addCalendar("annual", annual, false, false);

        DailyCalendar lunch = new DailyCalendar("12:00", "13:30:00:500"); // no zone
        s.addCalendar("lunch", lunch, false, false);
        DailyCalendar office = new DailyCalendar("08:00", "18:00");
        office.setTimeZone(PARIS_TZ);
        office.setInvertTimeRange(true); // excludes everything outside 08:00-18:00
        s.addCalendar("office-hours", office, false, false);

        CronCalendar nights = new CronCalendar(null, "* * 0-6 ? * *", PARIS_TZ);
        s.addCalendar("nights", nights, false, false);

        // A chain: holidays on top of weekends on top of fixed annual days.
        AnnualCalendar chainAnnual = new AnnualCalendar(PARIS_TZ);
        java.util.Calendar xmas = java.util.Calendar.getInstance(PARIS_TZ);
        xmas.set(2027, 11, 24, 0, 0, 0);
        chainAnnual.setDayExcluded(xmas, true);
        WeeklyCalendar chainWeekly = new WeeklyCalendar(chainAnnual);
        chainWeekly.setTimeZone(PARIS_TZ);
        HolidayCalendar chainTop = new HolidayCalendar(chainWeekly);
        chainTop.setTimeZone(PARIS_TZ);
        chainTop.addExcludedDate(paris(2027, 1, 7, 0, 0));
        s.addCalendar("business-days", chainTop, false, false);

        // A chain across zones: New York's 12:00-14:00 on top of Tokyo's weekend. Each calendar
        // of a Quartz chain is read in its own zone.
        WeeklyCalendar tokyoWeekend = new WeeklyCalendar(); // Saturday and Sunday
        tokyoWeekend.setTimeZone(TimeZone.getTimeZone("Asia/Tokyo"));
        DailyCalendar nyLunch = new DailyCalendar(tokyoWeekend, "12:00", "14:00");
        nyLunch.setTimeZone(NY_TZ);
        s.addCalendar("ny-lunch-tokyo-weekend", nyLunch, false, false);

        s.addCalendar("odd-days", new OddDaysCalendar(), false, false);
        s.addCalendar("ny-weekends", new WeeklyCalendar(NY_TZ), false, false);

        // Jobs.
        JobDetail report = newJob(ReportJob.class).withIdentity("nightly-report", "reports")
            .withDescription("the nightly report").usingJobData("region", "eu-west").usingJobData("format", "pdf")
            .requestRecovery().build();
        JobDetail serial = newJob(SerialJob.class).withIdentity("ledger", "billing").usingJobData("batch", "500").build();
        JobDetail plain = newJob(ReportJob.class).withIdentity("ping", "DEFAULT").build();
        JobDetail durable = newJob(ReportJob.class).withIdentity("manual-export", "DEFAULT").storeDurably()
            .withDescription("run by hand").build();
        s.addJob(durable, false);

        Date start = paris(2027, 1, 4, 9, 0); // a Monday

        // Cron triggers.
        s.scheduleJob(report, newTrigger().withIdentity("weekday-halfhours", "reports").startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0/30 9-17 ? * MON-FRI").inTimeZone(PARIS_TZ)
                .withMisfireHandlingInstructionDoNothing())
            .modifiedByCalendar("holidays").withPriority(7).withDescription("every half hour").build());
        s.scheduleJob(newTrigger().withIdentity("last-day-ny", "reports").forJob(report.getKey()).startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 15 10 L * ?").inTimeZone(NY_TZ)
                .withMisfireHandlingInstructionFireAndProceed()).build());
        s.scheduleJob(newTrigger().withIdentity("monthly-cal", "reports").forJob(report.getKey()).startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 6 * * ?").inTimeZone(PARIS_TZ)
                .withMisfireHandlingInstructionIgnoreMisfires())
            .modifiedByCalendar("month-ends").withPriority(1).build());
        s.scheduleJob(newTrigger().withIdentity("annual-cal", "reports").forJob(report.getKey()).startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 7 * * ?").inTimeZone(PARIS_TZ))
            .modifiedByCalendar("annual").build());
        s.scheduleJob(newTrigger().withIdentity("hourly-not-nights", "ops").forJob(report.getKey()).startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 * * * ?").inTimeZone(PARIS_TZ))
            .modifiedByCalendar("nights").build());
        s.scheduleJob(newTrigger().withIdentity("quarter-hours-office", "ops").forJob(report.getKey()).startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0/15 * ? * *").inTimeZone(PARIS_TZ))
            .modifiedByCalendar("office-hours").build());
        s.scheduleJob(newTrigger().withIdentity("no-wednesday", "ops").forJob(report.getKey()).startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 30 8 ? * *").inTimeZone(PARIS_TZ))
            .modifiedByCalendar("no-wednesday").build());
        s.scheduleJob(newTrigger().withIdentity("zones-chain", "ops").forJob(report.getKey())
            .startAt(paris(2027, 1, 8, 9, 0)) // a Friday: Tokyo's Saturday starts at 16:00 in Paris
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 * * * ?").inTimeZone(PARIS_TZ))
            .modifiedByCalendar("ny-lunch-tokyo-weekend").build());
        s.scheduleJob(newTrigger().withIdentity("paused-cron", "ops").forJob(report.getKey()).startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 12 ? * MON#1").inTimeZone(PARIS_TZ)).build());

        // Simple triggers: every misfire instruction, state advanced as if they had fired.
        s.scheduleJob(serial, newTrigger().withIdentity("every-90-min", "billing").startAt(start)
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInMinutes(90).repeatForever()
                .withMisfireHandlingInstructionNextWithRemainingCount())
            .modifiedByCalendar("weekends").withPriority(9).build());
        advance(s, TriggerKey.triggerKey("every-90-min", "billing"), 3);
        s.scheduleJob(newTrigger().withIdentity("ten-times", "billing").forJob(serial.getKey()).startAt(start)
            .endAt(paris(2027, 1, 4, 16, 30))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInHours(1).withRepeatCount(10)
                .withMisfireHandlingInstructionNowWithExistingCount()).build());
        advance(s, TriggerKey.triggerKey("ten-times", "billing"), 2);
        s.scheduleJob(newTrigger().withIdentity("five-remaining", "billing").forJob(serial.getKey()).startAt(start)
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInMinutes(10).withRepeatCount(5)
                .withMisfireHandlingInstructionNowWithRemainingCount()).build());
        s.scheduleJob(newTrigger().withIdentity("next-existing", "billing").forJob(serial.getKey()).startAt(start)
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInSeconds(45).withRepeatCount(20)
                .withMisfireHandlingInstructionNextWithExistingCount()).build());
        s.scheduleJob(plain, newTrigger().withIdentity("once", "DEFAULT").startAt(paris(2027, 2, 1, 10, 0))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withMisfireHandlingInstructionFireNow()).build());
        s.scheduleJob(newTrigger().withIdentity("ignore-misfires", "DEFAULT").forJob(plain.getKey()).startAt(start)
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInMinutes(5).withRepeatCount(3)
                .withMisfireHandlingInstructionIgnoreMisfires()).build());

        // Calendar-interval triggers.
        s.scheduleJob(newTrigger().withIdentity("every-2-days", "ops").forJob(report.getKey()).startAt(start)
            .withSchedule(CalendarIntervalScheduleBuilder.calendarIntervalSchedule().withIntervalInDays(2)
                .inTimeZone(PARIS_TZ).preserveHourOfDayAcrossDaylightSavings(true)
                .withMisfireHandlingInstructionDoNothing())
            .modifiedByCalendar("business-days").build());
        advance(s, TriggerKey.triggerKey("every-2-days", "ops"), 4);
        s.scheduleJob(newTrigger().withIdentity("month-end-ny", "ops").forJob(report.getKey())
            .startAt(Date.from(ZonedDateTime.of(2027, 1, 31, 2, 30, 0, 0, ZoneId.of("America/New_York")).toInstant()))
            .withSchedule(CalendarIntervalScheduleBuilder.calendarIntervalSchedule().withIntervalInMonths(1)
                .inTimeZone(NY_TZ).skipDayIfHourDoesNotExist(true)
                .withMisfireHandlingInstructionFireAndProceed()).build());

        // Daily-time-interval triggers: no zone in Quartz's tables (the JVM default zone).
        s.scheduleJob(newTrigger().withIdentity("office-45-min", "ops").forJob(report.getKey()).startAt(start)
            .withSchedule(DailyTimeIntervalScheduleBuilder.dailyTimeIntervalSchedule()
                .startingDailyAt(TimeOfDay.hourAndMinuteOfDay(9, 0)).endingDailyAt(TimeOfDay.hourAndMinuteOfDay(17, 0))
                .onMondayThroughFriday().withIntervalInMinutes(45).withRepeatCount(100)
                .withMisfireHandlingInstructionFireAndProceed())
            .modifiedByCalendar("lunch").withPriority(3).build());
        advance(s, TriggerKey.triggerKey("office-45-min", "ops"), 5);
        s.scheduleJob(newTrigger().withIdentity("two-hourly", "ops").forJob(report.getKey()).startAt(start)
            .withSchedule(DailyTimeIntervalScheduleBuilder.dailyTimeIntervalSchedule()
                .withIntervalInHours(2).withMisfireHandlingInstructionDoNothing()).withPriority(0).build());

        // Not importable: a custom calendar, a zone clash, a blob trigger, trigger job data.
        s.scheduleJob(newTrigger().withIdentity("odd-days", "ops").forJob(report.getKey()).startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 9 * * ?").inTimeZone(PARIS_TZ))
            .modifiedByCalendar("odd-days").build());
        s.scheduleJob(newTrigger().withIdentity("zone-clash", "ops").forJob(report.getKey()).startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 9 * * ?").inTimeZone(PARIS_TZ))
            .modifiedByCalendar("ny-weekends").build());
        TaggedTrigger blob = new TaggedTrigger();
        blob.setKey(TriggerKey.triggerKey("tagged", "ops"));
        blob.setJobKey(plain.getKey());
        blob.setStartTime(start);
        blob.setRepeatInterval(60000);
        blob.setRepeatCount(SimpleTrigger.REPEAT_INDEFINITELY);
        s.scheduleJob(blob);
        s.scheduleJob(newTrigger().withIdentity("with-data", "ops").forJob(plain.getKey()).startAt(start)
            .usingJobData("mode", "full")
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 3 * * ?").inTimeZone(PARIS_TZ)).build());

        // Paused: one trigger, and the whole group "billing" (recorded in PAUSED_TRIGGER_GRPS),
        // plus a group paused before it has any trigger.
        s.pauseTrigger(TriggerKey.triggerKey("paused-cron", "ops"));
        s.pauseTriggers(GroupMatcher.triggerGroupEquals("billing"));
        s.pauseTriggers(GroupMatcher.triggerGroupEquals("later"));
    }

    static void populateLegacy(Scheduler s) throws Exception {
        // useProperties=false: job data maps are serialized JobDataMaps.
        JobDetail strings = newJob(ReportJob.class).withIdentity("archive", "legacy")
            .usingJobData("bucket", "s3://archive").usingJobData("days", "30").build();
        JobDetail typed = newJob(ReportJob.class).withIdentity("counter", "legacy")
            .usingJobData("limit", 10).usingJobData("label", "x").build();
        Date start = paris(2027, 1, 4, 9, 0);
        s.scheduleJob(strings, newTrigger().withIdentity("archive-daily", "legacy").startAt(start)
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 2 * * ?").inTimeZone(PARIS_TZ)).build());
        s.scheduleJob(typed, newTrigger().withIdentity("counter-hourly", "legacy").startAt(start)
            .withSchedule(SimpleScheduleBuilder.repeatHourlyForever()).build());
    }

    static void populateOther(Scheduler s) throws Exception {
        // Another scheduler in the same tables: --sched-name chooses.
        JobDetail j = newJob(ReportJob.class).withIdentity("elsewhere", "DEFAULT").build();
        s.scheduleJob(j, newTrigger().withIdentity("elsewhere", "DEFAULT").startAt(paris(2027, 1, 4, 9, 0))
            .withSchedule(SimpleScheduleBuilder.repeatMinutelyForever()).build());
    }

    static void answers(Scheduler s, PrintStream out) throws Exception {
        List<TriggerKey> keys = new ArrayList<>(s.getTriggerKeys(GroupMatcher.anyTriggerGroup()));
        keys.sort(Comparator.comparing(TriggerKey::toString));
        for (TriggerKey k : keys) {
            OperableTrigger t = (OperableTrigger) s.getTrigger(k);
            org.quartz.Calendar cal = t.getCalendarName() == null ? null : s.getCalendar(t.getCalendarName());
            StringBuilder sb = new StringBuilder();
            sb.append(s.getSchedulerName()).append(' ').append(k.getGroup()).append(' ').append(k.getName())
              .append(' ').append(s.getTriggerState(k));
            for (int i = 0; i < ANSWERS && t.getNextFireTime() != null; i++) {
                sb.append(' ').append(t.getNextFireTime().getTime());
                t.triggered(cal);
            }
            out.println(sb);
        }
    }

    static final String[] TABLES = {"JOB_DETAILS", "TRIGGERS", "SIMPLE_TRIGGERS", "CRON_TRIGGERS",
        "SIMPROP_TRIGGERS", "BLOB_TRIGGERS", "CALENDARS", "PAUSED_TRIGGER_GRPS", "SCHEDULER_STATE", "LOCKS"};
    static final int[] KEY_COLUMNS = {3, 3, 3, 3, 3, 3, 2, 2, 2, 2};

    /** Writes every row of the prefix's tables as INSERTs, blobs hex-encoded. */
    static void dump(Connection c, String dialect, String prefix, PrintStream out) throws SQLException {
        for (int ti = 0; ti < TABLES.length; ti++) {
            String name = prefix + TABLES[ti];
            String order = KEY_COLUMNS[ti] == 3 ? "1, 2, 3" : "1, 2";
            try (Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT * FROM " + name + " ORDER BY " + order)) {
                ResultSetMetaData md = rs.getMetaData();
                while (rs.next()) {
                    StringBuilder cols = new StringBuilder(), vals = new StringBuilder();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        if (i > 1) { cols.append(", "); vals.append(", "); }
                        cols.append(md.getColumnName(i).toUpperCase(Locale.ROOT));
                        vals.append(literal(rs, i, md.getColumnType(i), dialect));
                    }
                    out.println("INSERT INTO " + name + " (" + cols + ") VALUES (" + vals + ");");
                }
            }
        }
    }

    static String literal(ResultSet rs, int i, int type, String dialect) throws SQLException {
        switch (type) {
            case Types.BINARY: case Types.VARBINARY: case Types.LONGVARBINARY: case Types.BLOB: {
                byte[] b = rs.getBytes(i);
                if (b == null) return "NULL";
                StringBuilder hex = new StringBuilder();
                for (byte x : b) hex.append(String.format("%02x", x));
                return dialect.equals("postgres") ? "decode('" + hex + "', 'hex')" : "X'" + hex + "'";
            }
            case Types.BOOLEAN: case Types.BIT: {
                boolean v = rs.getBoolean(i);
                return rs.wasNull() ? "NULL" : (v ? "TRUE" : "FALSE");
            }
            case Types.BIGINT: case Types.INTEGER: case Types.SMALLINT: case Types.TINYINT:
            case Types.NUMERIC: case Types.DECIMAL: {
                String v = rs.getString(i);
                return v == null ? "NULL" : v;
            }
        }
        String v = rs.getString(i);
        if (v == null) return "NULL";
        if (v.contains(";") || v.contains("\\") || v.contains("\n")) throw new IllegalStateException("value needs escaping: " + v);
        return "'" + v.replace("'", "''") + "'";
    }

    public static void main(String[] args) throws Exception {
        String dialect = args[0], url = args[1], user = args[2], password = args[3], out = args[4];
        String delegate = dialect.equals("postgres") ? "org.quartz.impl.jdbcjobstore.PostgreSQLDelegate"
                                                     : "org.quartz.impl.jdbcjobstore.StdJDBCDelegate";
        Scheduler main = scheduler("MAIN", "QRTZ_", true, delegate, url, user, password);
        Scheduler other = scheduler("OTHER", "QRTZ_", true, delegate, url, user, password);
        Scheduler legacy = scheduler("LEGACY", "LEGACY_", false, delegate, url, user, password);
        long t0 = System.currentTimeMillis();
        populateMain(main);
        System.err.println("populated MAIN in " + (System.currentTimeMillis() - t0) + " ms");
        populateOther(other);
        populateLegacy(legacy);
        try (PrintStream a = new PrintStream(new FileOutputStream(out + "/quartz-next.txt"), true, "UTF-8")) {
            a.println("# Written by testdata/gen/Gen.java from Quartz 2.3.2's stored state: scheduler group name");
            a.println("# state, then the next " + ANSWERS + " fire times (epoch ms) Quartz computes (triggered(cal)).");
            answers(main, a);
            answers(legacy, a);
            answers(other, a);
        }
        try (Connection c = DriverManager.getConnection(url, user, password);
             PrintStream d = new PrintStream(new FileOutputStream(out + "/data.sql"), true, "UTF-8")) {
            d.println("-- Written by testdata/gen/Gen.java: what Quartz 2.3.2 stored (gen.sh).");
            dump(c, dialect, "QRTZ_", d);
            dump(c, dialect, "LEGACY_", d);
        }
        // Not shutdown(): the never-started schedulers' threads would keep the JVM waiting.
        System.exit(0);
    }
}
