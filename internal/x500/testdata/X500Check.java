// X500Check answers, for each base64 line of its input, what Java's
// X500Principal says: with "valid", 1 or 0 for new X500Principal(string);
// with "name", the base64 of getName() of the DER name ("!" if refused).
// Used by x500_test.go's TestAgainstJava.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import javax.security.auth.x500.X500Principal;

public class X500Check {
    public static void main(String[] args) throws Exception {
        boolean valid = args[0].equals("valid");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            byte[] b = Base64.getDecoder().decode(line);
            if (valid) {
                try {
                    new X500Principal(new String(b, StandardCharsets.UTF_8));
                    out.append("1\n");
                } catch (IllegalArgumentException e) {
                    out.append("0\n");
                }
            } else {
                try {
                    String n = new X500Principal(b).getName();
                    out.append(Base64.getEncoder().encodeToString(n.getBytes(StandardCharsets.UTF_8))).append('\n');
                } catch (IllegalArgumentException e) {
                    out.append("!\n");
                }
            }
        }
        System.out.print(out);
    }
}
