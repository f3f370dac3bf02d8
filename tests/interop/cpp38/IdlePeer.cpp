// An Ice 3.8 peer that keeps a connection idle, for floe's Ice 3.8 connection tests.
//
//   idle-peer server ENDPOINTS
//       Serves the object `idle` (any operation succeeds with no result) on ENDPOINTS, prints
//       "ready", and prints "closed: REASON" whenever a connection it dispatched on closes.
//   idle-peer client PROXY SECONDS
//       Pings PROXY, keeps its connection idle for SECONDS, then prints "RESULT same-connection"
//       when the connection is still the one it pinged over and pings again over it;
//       "RESULT closed: REASON" when the connection closed while idle.
//   idle-peer glacier2 PROXY SECONDS
//       The same through the router of Ice.Default.Router, after creating a session on it
//       (createSession("idle", "idle")): the connection watched is the router's.
//
// Ice properties come from the command line (--Ice.Connection.Client.IdleTimeout=2, ...).

#include <Ice/Ice.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace
{
    std::mutex outputMutex;

    void say(const std::string& line)
    {
        std::lock_guard<std::mutex> lock(outputMutex);
        std::cout << line << std::endl;
    }

    std::string closeReason(const Ice::ConnectionPtr& connection)
    {
        try
        {
            connection->throwException();
        }
        catch (const std::exception& ex)
        {
            return ex.what();
        }
        return "closed without an exception";
    }

    // Answers every request with an empty result, and watches the connections it was called on.
    class IdleServant final : public Ice::Blobject
    {
    public:
        bool ice_invoke(std::vector<std::byte>, std::vector<std::byte>& out, const Ice::Current& current) final
        {
            if (current.con)
            {
                current.con->setCloseCallback(
                    [](const Ice::ConnectionPtr& connection) { say("closed: " + closeReason(connection)); });
            }
            // An empty encapsulation of encoding 1.1.
            out = {std::byte{6}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{1}, std::byte{1}};
            return true;
        }
    };

    int runServer(const Ice::CommunicatorPtr& communicator, const std::string& endpoints)
    {
        auto adapter = communicator->createObjectAdapterWithEndpoints("Idle", endpoints);
        adapter->add(std::make_shared<IdleServant>(), Ice::stringToIdentity("idle"));
        adapter->activate();
        say("ready");
        communicator->waitForShutdown();
        return 0;
    }

    // Creates a Glacier2 session on the default router, marshaling createSession's two strings
    // by hand (the Glacier2 library is not needed for one call).
    void createSession(const Ice::CommunicatorPtr& communicator)
    {
        auto router = communicator->getDefaultRouter();
        if (!router)
        {
            throw std::runtime_error("no Ice.Default.Router");
        }
        Ice::OutputStream out(communicator);
        out.startEncapsulation();
        out.write(std::string("idle"));
        out.write(std::string("idle"));
        out.endEncapsulation();
        std::vector<std::byte> inParams;
        out.finished(inParams);
        std::vector<std::byte> outParams;
        if (!(*router)->ice_invoke("createSession", Ice::OperationMode::Normal, inParams, outParams))
        {
            throw std::runtime_error("createSession raised a user exception");
        }
    }

    int runClient(const Ice::CommunicatorPtr& communicator, const std::string& proxy, int seconds, bool routed)
    {
        if (routed)
        {
            createSession(communicator);
        }
        Ice::ObjectPrx target(communicator, proxy);
        target->ice_ping();
        auto connection = target->ice_getConnection();
        std::atomic<bool> closed{false};
        std::string reason;
        std::mutex reasonMutex;
        connection->setCloseCallback(
            [&](const Ice::ConnectionPtr& c)
            {
                std::lock_guard<std::mutex> lock(reasonMutex);
                reason = closeReason(c);
                closed = true;
            });
        say("idle for " + std::to_string(seconds) + " s");
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        while (!closed && std::chrono::steady_clock::now() < until)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (closed)
        {
            std::lock_guard<std::mutex> lock(reasonMutex);
            say("RESULT closed: " + reason);
            return 0;
        }
        target->ice_ping();
        if (target->ice_getConnection() != connection)
        {
            say("RESULT new-connection");
            return 0;
        }
        say("RESULT same-connection");
        return 0;
    }
}

int main(int argc, char* argv[])
{
    try
    {
        Ice::CommunicatorHolder holder(argc, argv);
        std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "server" && argc == 3)
        {
            return runServer(holder.communicator(), argv[2]);
        }
        if (mode == "client" && argc == 4)
        {
            return runClient(holder.communicator(), argv[2], std::stoi(argv[3]), false);
        }
        if (mode == "glacier2" && argc == 4)
        {
            return runClient(holder.communicator(), argv[2], std::stoi(argv[3]), true);
        }
        std::cerr << "usage: idle-peer server ENDPOINTS | idle-peer client|glacier2 PROXY SECONDS" << std::endl;
        return 2;
    }
    catch (const std::exception& ex)
    {
        std::cerr << "idle-peer: " << ex.what() << std::endl;
        return 1;
    }
}
