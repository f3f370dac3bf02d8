// An Ice for Java client: pings each proxy given on its command line (through the locator of
// its --Ice.Default.Locator), prints "pinged <proxy>" for each; exits 1 on the first failure.
public class Ping {
    public static void main(String[] args) {
        java.util.List<String> rest = new java.util.ArrayList<>();
        try (com.zeroc.Ice.Communicator communicator = com.zeroc.Ice.Util.initialize(args, rest)) {
            for (String proxy : rest) {
                communicator.stringToProxy(proxy).ice_ping();
                System.out.println("pinged " + proxy);
            }
        } catch (com.zeroc.Ice.LocalException e) {
            System.err.println(e);
            System.exit(1);
        }
    }
}
