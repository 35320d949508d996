# Sundial's own misfire cases around daily-time-interval triggers with an end time, appended to
# extra-corpus.txt (deterministic): python3 daily-end-gen.py, then the oracle (with
# oracle-daily-repeat-count.patch applied) answers them into extra-expected.txt.
from datetime import datetime
from zoneinfo import ZoneInfo

def ms(zone, s, fold=0):
    d = datetime.fromisoformat(s).replace(tzinfo=ZoneInfo(zone), fold=fold)
    return int(d.timestamp() * 1000)

out = []
def case(zone, start, end, now, fired, instr, n, cal, trig):
    out.append(f"misfire {zone} {start} {end} {now} {fired} {instr} {n} {cal} ;; {trig}")

# 1. Where the end falls relative to the window and its slots (UTC, 09:00-17:00 every 2 h,
#    Monday to Friday; Monday 2024-06-10).
out.append("# [daily-end-where] end on a slot, 1 ms either side of one, between slots, before and after the window, on the next day and on a day off; 0 or 2 fires before; now before the end, just after, 3 h after and 2 days after (UTC, 09:00-17:00 every 2 h Mon-Fri)")
ends = ["2024-06-10T13:00:00", "2024-06-10T12:59:59.999", "2024-06-10T13:00:00.001", "2024-06-10T14:00:00",
        "2024-06-10T08:00:00", "2024-06-10T17:00:00", "2024-06-10T17:30:00", "2024-06-11T14:00:00",
        "2024-06-15T10:00:00"]
start = ms("UTC", "2024-06-10T00:00:00")
for e in ends:
    end = ms("UTC", e)
    for fired in (0, 2):
        for dn in (-5 * 60000, 60000, 3 * 3600000, 2 * 86400000):
            for instr in (-1, 0, 1, 2):
                case("UTC", start, end, end + dn, fired, instr, 4, "none", "daily 09:00:00 17:00:00 2,3,4,5,6 2 HOUR")

# 2. A start inside the window that is already past the end's slot, seconds interval.
out.append("# [daily-end-seconds] every 45 s, the end 10 s after a slot, start mid-window (Asia/Kolkata)")
z = "Asia/Kolkata"
start = ms(z, "2024-01-15T10:00:20")
for endoff in (0, 10_000, 44_999, 45_000):
    end = ms(z, "2024-01-15T10:03:00") + endoff
    for fired in (0, 1, 3):
        for instr in (-1, 1, 2):
            case(z, start, end, end + 120_000, fired, instr, 4, "none", "daily 10:00:00 11:00:00 1,2,3,4,5,6,7 45 SECOND")

# 3. The end in a DST change: New York fall back (01:30 in either pass) and spring forward (in the gap).
out.append("# [daily-end-dst] end in the repeated hour (either pass) and in the spring-forward gap; every 20 min 00:30-03:00 (America/New_York)")
z = "America/New_York"
for day, endlocal, fold in (("2024-11-03", "2024-11-03T01:30:00", 0), ("2024-11-03", "2024-11-03T01:30:00", 1),
                            ("2024-11-03", "2024-11-03T01:10:00", 1), ("2024-03-10", "2024-03-10T03:10:00", 0),
                            ("2024-03-10", "2024-03-10T01:50:00", 0)):
    start = ms(z, day + "T00:00:00")
    end = ms(z, endlocal, fold)
    for fired in (0, 2, 4):
        for instr in (-1, 1, 2):
            case(z, start, end, end + 90 * 60000, fired, instr, 5, "none", "daily 00:30:00 03:00:00 1,2,3,4,5,6,7 20 MINUTE")
out.append("# [daily-end-dst] Lord Howe's 30-minute changes: end in the repeated half hour and just after the gap; every 15 min 01:00-03:00 (Australia/Lord_Howe)")
z = "Australia/Lord_Howe"
for day, endlocal, fold in (("2024-04-07", "2024-04-07T01:40:00", 0), ("2024-04-07", "2024-04-07T01:40:00", 1),
                            ("2024-10-06", "2024-10-06T02:35:00", 0)):
    start = ms(z, day + "T00:00:00")
    end = ms(z, endlocal, fold)
    for fired in (0, 3):
        for instr in (-1, 1, 2):
            case(z, start, end, end + 3600000, fired, instr, 5, "none", "daily 01:00:00 03:00:00 1,2,3,4,5,6,7 15 MINUTE")

# 4. A calendar excludes the slot past the end (or the end's whole day).
out.append("# [daily-end-calendar] the slot past the end excluded by a daily or holiday calendar, or not (UTC, 09:00-17:00 every 2 h)")
start = ms("UTC", "2024-06-10T00:00:00")
end = ms("UTC", "2024-06-10T14:00:00")
for cal in ("daily:14:30:00-15:30:00", "daily:16:00:00-16:30:00", "holiday:2024-06-10", "weekly:2"):
    for fired in (0, 1, 2):
        for instr in (-1, 1, 2):
            case("UTC", start, end, end + 3 * 3600000, fired, instr, 4, cal, "daily 09:00:00 17:00:00 1,2,3,4,5,6,7 2 HOUR")

# 5. A repeat count and an end time both near: whichever comes first ends the trigger.
out.append("# [daily-end-repeat] repeat count 1, 2 or 3 with the end between the 3rd and 4th slots (UTC, every 30 min 09:00-12:00)")
start = ms("UTC", "2024-06-10T09:00:00")
end = ms("UTC", "2024-06-10T10:10:00")
for rc in (1, 2, 3):
    for fired in (0, 1, 2, 3):
        for instr in (-1, 1, 2):
            case("UTC", start, end, end + 7200000, fired, instr, 4, "none", f"daily 09:00:00 12:00:00 1,2,3,4,5,6,7 30 MINUTE {rc}")
print("# Sundial's misfire cases around daily-time-interval triggers with an end time (daily-end-gen.py)")
print("\n".join(out))
