// Samples writes the serialization streams internal/javaser's tests read (run.sh):
// JDK classes Quartz stores and the stream features around them. Each file's expected
// decoding is asserted in javaser_test.go.
import java.io.*;
import java.util.*;

public class Samples {
    enum Color { RED, GREEN }

    static class Node implements Serializable {
        private static final long serialVersionUID = 7L;
        String name;
        Node next;            // a cycle: next refers back to this node
        int[] counts = {1, -2, 3};
        char letter = 'é';
        double ratio = 0.5;
        float half = 1.5f;
        short small = -7;
        byte tiny = -1;
        long big = Long.MIN_VALUE;
        boolean flag = true;
        Color color = Color.GREEN;
        Object[] mixed;
    }

    static void write(String file, Object o) throws IOException {
        try (ObjectOutputStream out = new ObjectOutputStream(new FileOutputStream(file))) {
            out.writeObject(o);
        }
    }

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"));
        TreeSet<Date> dates = new TreeSet<>();
        dates.add(new Date(1798761600000L)); // 2027-01-01T00:00:00Z
        dates.add(new Date(1829088000000L)); // 2027-12-18T00:00:00Z
        write(dir + "/treeset-date.ser", dates);

        ArrayList<Object> list = new ArrayList<>();
        list.add("a");
        list.add(Integer.valueOf(42));
        list.add(null);
        list.add("a"); // the same string again: a back reference
        write(dir + "/arraylist.ser", list);

        HashMap<String, String> strings = new LinkedHashMap<>();
        strings.put("region", "eu-west");
        strings.put("nul\u0000and\uD83D\uDE00", "π");
        write(dir + "/linkedhashmap.ser", strings);

        HashMap<String, Object> mixed = new HashMap<>();
        mixed.put("count", Long.valueOf(3));
        write(dir + "/hashmap-long.ser", mixed);

        Properties props = new Properties();
        props.setProperty("k", "v");
        write(dir + "/properties.ser", props);

        write(dir + "/timezone.ser", TimeZone.getTimeZone("Europe/Paris"));
        GregorianCalendar cal = new GregorianCalendar(TimeZone.getTimeZone("America/New_York"));
        cal.setTimeInMillis(1798761600000L);
        write(dir + "/gregoriancalendar.ser", cal);

        Node n = new Node();
        n.name = "first";
        n.next = n;
        n.mixed = new Object[] {"x", n, new boolean[] {true, false}};
        write(dir + "/node-cycle.ser", n);

        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 70000; i++) sb.append('z');
        write(dir + "/longstring.ser", sb.toString());
    }
}
